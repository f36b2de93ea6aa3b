package dev.statewright.client;

import com.google.protobuf.Timestamp;
import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.FailTaskRequest;
import dev.statewright.v1.FailTaskResponse;
import dev.statewright.v1.GetTaskRequest;
import dev.statewright.v1.GetTaskResponse;
import dev.statewright.v1.HeartbeatTaskRequest;
import dev.statewright.v1.HeartbeatTaskResponse;
import dev.statewright.v1.ListTasksRequest;
import dev.statewright.v1.ListTasksResponse;
import dev.statewright.v1.PollTasksRequest;
import dev.statewright.v1.PollTasksResponse;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskServiceGrpc;
import dev.statewright.v1.TaskStatus;
import io.grpc.Context;
import io.grpc.Deadline;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * An in-process TaskService: tasks offered per queue are handed to polls (a poll with nothing to
 * give waits like the real one, up to its {@code wait}, unless the client cancels it); every other
 * answer is scripted by the test. Records every request.
 */
final class FakeTaskService extends TaskServiceGrpc.TaskServiceImplBase implements AutoCloseable {
  final List<PollTasksRequest> polls = new CopyOnWriteArrayList<>();
  final List<Deadline> pollDeadlines = new CopyOnWriteArrayList<>();
  final List<HeartbeatTaskRequest> heartbeats = new CopyOnWriteArrayList<>();
  final List<CompleteTaskRequest> completes = new CopyOnWriteArrayList<>();
  final List<FailTaskRequest> fails = new CopyOnWriteArrayList<>();
  final List<Object> reads = new CopyOnWriteArrayList<>();
  /** The deadline of every call but PollTasks, in arrival order. */
  final List<Deadline> callDeadlines = new CopyOnWriteArrayList<>();
  /** Polls that were still waiting when the client cancelled them. */
  final AtomicInteger cancelledPolls = new AtomicInteger();

  volatile Function<HeartbeatTaskRequest, HeartbeatTaskResponse> heartbeat =
      request -> HeartbeatTaskResponse.newBuilder().setLeaseExpireTime(fromNow(Duration.ofSeconds(30))).build();
  volatile Function<CompleteTaskRequest, CompleteTaskResponse> complete = request -> CompleteTaskResponse.getDefaultInstance();
  volatile Function<FailTaskRequest, FailTaskResponse> fail =
      request -> FailTaskResponse.newBuilder().setTask(Task.newBuilder().setName(request.getName()).setStatus(TaskStatus.TASK_STATUS_BACKOFF)).build();
  volatile Function<GetTaskRequest, GetTaskResponse> getTask;
  volatile Function<ListTasksRequest, ListTasksResponse> listTasks;

  // Guarded by this.
  private final Map<String, Deque<Task>> ready = new HashMap<>();
  private final List<Waiting> waiting = new ArrayList<>();
  /** Answers for the next polls, in order, before any offered task: an error or one task. */
  private final Deque<Object> pollScript = new ArrayDeque<>();

  private final ScheduledExecutorService timer =
      Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "fake-task-service-timer");
        t.setDaemon(true);
        return t;
      });

  private static final class Waiting {
    final PollTasksRequest request;
    final StreamObserver<PollTasksResponse> observer;
    ScheduledFuture<?> timeout;

    Waiting(PollTasksRequest request, StreamObserver<PollTasksResponse> observer) {
      this.request = request;
      this.observer = observer;
    }
  }

  static Timestamp fromNow(Duration d) {
    Instant at = Instant.now().plus(d);
    return Timestamp.newBuilder().setSeconds(at.getEpochSecond()).setNanos(at.getNano()).build();
  }

  /** Tasks for the queue they name, handed out to polls in order. */
  void offer(Task... tasks) {
    List<Map.Entry<Waiting, List<Task>>> answers = new ArrayList<>();
    synchronized (this) {
      for (Task task : tasks) {
        ready.computeIfAbsent(task.getQueue(), q -> new ArrayDeque<>()).add(task);
      }
      for (Waiting w : List.copyOf(waiting)) {
        List<Task> given = take(w.request);
        if (!given.isEmpty()) {
          waiting.remove(w);
          w.timeout.cancel(false);
          answers.add(Map.entry(w, given));
        }
      }
    }
    answers.forEach(a -> answer(a.getKey().observer, a.getValue()));
  }

  /** The next polls get these answers (a StatusRuntimeException or a Task), one each, in order. */
  synchronized void scriptPolls(Object... outcomes) {
    for (Object outcome : outcomes) {
      if (!(outcome instanceof StatusRuntimeException) && !(outcome instanceof Task)) {
        throw new IllegalArgumentException("not a poll outcome: " + outcome);
      }
      pollScript.add(outcome);
    }
  }

  synchronized int waitingPolls() {
    return waiting.size();
  }

  private List<Task> take(PollTasksRequest request) {
    Deque<Task> queue = ready.getOrDefault(request.getQueue(), new ArrayDeque<>());
    List<Task> given = new ArrayList<>();
    int max = Math.max(1, request.getMaxTasks());
    while (given.size() < max && !queue.isEmpty()) {
      given.add(queue.poll());
    }
    return given;
  }

  private static void answer(StreamObserver<PollTasksResponse> observer, List<Task> tasks) {
    if (((ServerCallStreamObserver<PollTasksResponse>) observer).isCancelled()) {
      return;
    }
    observer.onNext(PollTasksResponse.newBuilder().addAllTasks(tasks).build());
    observer.onCompleted();
  }

  @Override
  public void pollTasks(PollTasksRequest request, StreamObserver<PollTasksResponse> observer) {
    polls.add(request);
    pollDeadlines.add(Context.current().getDeadline());
    Object scripted;
    List<Task> given;
    synchronized (this) {
      scripted = pollScript.poll();
      given = scripted == null ? take(request) : List.of();
      if (scripted == null && given.isEmpty() && (request.getWait().getSeconds() > 0 || request.getWait().getNanos() > 0)) {
        Waiting w = new Waiting(request, observer);
        ServerCallStreamObserver<PollTasksResponse> call = (ServerCallStreamObserver<PollTasksResponse>) observer;
        call.setOnCancelHandler(() -> {
          boolean removed;
          synchronized (this) {
            removed = waiting.remove(w);
          }
          if (removed) {
            w.timeout.cancel(false);
            cancelledPolls.incrementAndGet();
          }
        });
        long waitNanos = request.getWait().getSeconds() * 1_000_000_000L + request.getWait().getNanos();
        w.timeout = timer.schedule(() -> {
          boolean removed;
          synchronized (this) {
            removed = waiting.remove(w);
          }
          if (removed) {
            answer(observer, List.of());
          }
        }, waitNanos, TimeUnit.NANOSECONDS);
        waiting.add(w);
        return;
      }
    }
    if (scripted instanceof StatusRuntimeException e) {
      observer.onError(e);
    } else if (scripted instanceof Task t) {
      answer(observer, List.of(t));
    } else {
      answer(observer, given);
    }
  }

  private <Q, R> void unary(Q request, List<? super Q> log, Function<Q, R> behaviour, StreamObserver<R> observer) {
    log.add(request);
    callDeadlines.add(Context.current().getDeadline());
    R response;
    try {
      response = behaviour.apply(request);
    } catch (StatusRuntimeException e) {
      observer.onError(e);
      return;
    }
    observer.onNext(response);
    observer.onCompleted();
  }

  @Override
  public void heartbeatTask(HeartbeatTaskRequest request, StreamObserver<HeartbeatTaskResponse> observer) {
    unary(request, heartbeats, heartbeat, observer);
  }

  @Override
  public void completeTask(CompleteTaskRequest request, StreamObserver<CompleteTaskResponse> observer) {
    unary(request, completes, complete, observer);
  }

  @Override
  public void failTask(FailTaskRequest request, StreamObserver<FailTaskResponse> observer) {
    unary(request, fails, fail, observer);
  }

  @Override
  public void getTask(GetTaskRequest request, StreamObserver<GetTaskResponse> observer) {
    unary(request, reads, getTask, observer);
  }

  @Override
  public void listTasks(ListTasksRequest request, StreamObserver<ListTasksResponse> observer) {
    unary(request, reads, listTasks, observer);
  }

  @Override
  public void close() {
    timer.shutdownNow();
  }
}
