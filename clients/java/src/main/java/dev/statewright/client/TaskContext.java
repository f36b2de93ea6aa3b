package dev.statewright.client;

import dev.statewright.v1.Task;
import java.time.Instant;
import java.util.Map;

/**
 * What a {@link TaskHandler} gets: the task, a way to report progress, and its cancellation.
 *
 * <p>The worker heartbeats every running task by itself; {@link #heartbeat(Map)} only hands it the
 * details to carry (and sends them soon). Cancellation is cooperative: the worker does not
 * interrupt a handler whose task was cancelled, and discards whatever it returns or throws. Only
 * at shutdown, past the grace period, are the handlers still running interrupted.
 */
public interface TaskContext {
  /** The task's resource name, {@code workflows/{workflow_id}/tasks/{task_id}}. */
  String name();

  /** The instance's resource name, {@code workflows/{workflow_id}}. */
  String workflow();

  /** The queue it was polled from. */
  String queue();

  /** The task state that scheduled it. */
  String state();

  /** This attempt, from 1. */
  int attempt();

  /** What the state's {@code input} expression gave; integral numbers come back as {@code Long}. */
  Map<String, Object> input();

  /** The details of the latest heartbeat before this attempt (empty on a first attempt). */
  Map<String, Object> heartbeatDetails();

  /** When the current lease expires unless renewed (the worker renews it). */
  Instant leaseExpireTime();

  /** The task as it was leased, lease token included. */
  Task task();

  /**
   * For an item of a fan-out (a task state with {@code map}), its index in the list; empty for the
   * task of a state without {@code map}.
   */
  default java.util.OptionalInt itemIndex() {
    return task().hasItemIndex()
        ? java.util.OptionalInt.of(task().getItemIndex())
        : java.util.OptionalInt.empty();
  }

  /**
   * Keeps {@code details} (plain data, converted at once) for the worker's heartbeats, and asks for
   * one soon: at once unless one was sent less than a second ago. Never blocks on the server.
   *
   * @throws IllegalArgumentException if {@code details} cannot be converted to a Struct
   */
  void heartbeat(Map<String, ?> details);

  /**
   * True once the task is no longer this worker's to finish: a heartbeat answered {@code
   * cancel_requested} (its state was left), its lease was superseded, or the worker shut down past
   * its grace period and released it. Its result is then discarded: stop soon.
   */
  boolean isCancelled();

  /**
   * Runs {@code callback} when the task is cancelled (on a worker thread), or at once on this thread
   * if it already is. A callback that throws is logged and ignored.
   */
  void onCancel(Runnable callback);
}
