package dev.statewright.client;

import dev.statewright.v1.WatchWorkflowRequest;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowServiceGrpc;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * A watch that reopens its stream after transport failures, resuming right after the last
 * revision it handed over.
 *
 * <p>The server replays history after {@code after_revision}, so resuming from the last revision
 * the caller saw delivers every later revision exactly once; revisions at or below it (a replica
 * may replay overlapping history) are dropped here.
 *
 * <p>Every stream runs in a child of the {@link Context} current when the watch was created, so
 * cancelling that context (or its deadline) ends the watch, and {@link #close} can cancel the
 * stream from another thread.
 */
final class ResumingWatch implements WatchStream {
  private final WorkflowServiceGrpc.WorkflowServiceBlockingStub stub;
  private final ManagedChannel channel;
  private final Function<String, Workflow> getWorkflow;
  private final String name;
  private final WatchOptions options;
  private final Backoff backoff;
  private final Context parent;
  // Counted down by close() or the caller's context being cancelled: cuts a backoff wait short.
  private final CountDownLatch wake = new CountDownLatch(1);
  private final Context.CancellationListener onParentCancelled = context -> wake.countDown();

  private volatile boolean closed;
  private volatile Context.CancellableContext streamContext;
  private Iterator<WatchWorkflowResponse> stream;
  private Long after;
  private WatchWorkflowResponse pending;
  private boolean finished;

  ResumingWatch(
      WorkflowServiceGrpc.WorkflowServiceBlockingStub stub,
      ManagedChannel channel,
      Function<String, Workflow> getWorkflow,
      String name,
      WatchOptions options) {
    this.stub = stub;
    this.channel = channel;
    this.getWorkflow = getWorkflow;
    this.name = name;
    this.options = options;
    this.backoff = new Backoff(options.initialBackoff(), options.maxBackoff(), options.reconnectBudget());
    this.after = options.afterRevision().isPresent() ? options.afterRevision().getAsLong() : null;
    this.parent = Context.current();
  }

  @Override
  public boolean hasNext() {
    if (closed) {
      pending = null;
      finish();
      return false;
    }
    if (pending != null) {
      return true;
    }
    if (finished) {
      return false;
    }
    try {
      if (advance()) {
        return true;
      }
      finish();
      return false;
    } catch (RuntimeException e) {
      finish();
      throw e;
    }
  }

  @Override
  public WatchWorkflowResponse next() {
    if (!hasNext()) {
      throw new NoSuchElementException();
    }
    WatchWorkflowResponse message = pending;
    pending = null;
    return message;
  }

  @Override
  public void close() {
    closed = true;
    wake.countDown();
    // Only cancel here: the iterating thread may be inside hasNext, and it notices the
    // cancellation (and releases the stream itself) through the stream failing.
    cancelStream();
  }

  /** Reads until a new revision is pending (true) or the watch is over (false). */
  private boolean advance() {
    while (!closed) {
      StatewrightException failure = null;
      try {
        if (stream == null) {
          stream = open();
        }
        Iterator<WatchWorkflowResponse> messages = stream;
        while (messages.hasNext()) {
          WatchWorkflowResponse message = messages.next();
          if (after != null && message.getRevision() <= after) {
            continue;
          }
          after = message.getRevision();
          backoff.reset();
          pending = message;
          if (StatewrightClient.terminal(message.getWorkflow().getStatus())) {
            // Nothing can follow a terminal revision: release the stream now rather than
            // wait for the server to end it.
            finish();
          }
          return true;
        }
      } catch (StatusRuntimeException e) {
        if (closed) {
          return false;
        }
        failure = StatewrightException.from(e);
        // The caller's own cancellation (context, interrupt, closed channel) looks like a
        // transport failure, but reconnecting would defy it.
        if (callerCancelled() || !StatewrightClient.resumable(failure)) {
          throw failure;
        }
      }
      release();
      // Ended OK without a terminal revision (a draining server): nothing more can come only if
      // the instance already ended at a revision the caller has seen.
      if (failure == null && !closed && finishedQuietly(inParent(() -> getWorkflow.apply(name)))) {
        return false;
      }
      long delay = backoff.delayNanos();
      if (delay >= 0) {
        delay = Backoff.atLeastRetryDelay(delay, failure);
      }
      if (delay < 0) {
        throw failure != null
            ? failure
            : new StatewrightException(
                Status.Code.UNAVAILABLE, "watch of " + name + " kept ending before a terminal revision", "", "", Map.of(), null);
      }
      // After a dropped connection the channel waits out its own reconnect backoff (1 s growing to
      // 120 s) and fails calls at once meanwhile; have it try the server again now.
      channel.resetConnectBackoff();
      pause(delay);
    }
    return false;
  }

  private Iterator<WatchWorkflowResponse> open() {
    WatchWorkflowRequest.Builder request = WatchWorkflowRequest.newBuilder().setName(name);
    if (after != null) {
      request.setAfterRevision(after);
    }
    WorkflowServiceGrpc.WorkflowServiceBlockingStub s =
        options.streamTimeout().map(t -> stub.withDeadlineAfter(t.toNanos(), TimeUnit.NANOSECONDS)).orElse(stub);
    Context.CancellableContext context = parent.withCancellation();
    streamContext = context;
    if (closed) {
      // close() may have run before streamContext was set, and so not cancelled this stream.
      context.cancel(null);
    }
    return inContext(context, () -> s.watchWorkflow(request.build()));
  }

  private boolean finishedQuietly(Workflow current) {
    return StatewrightClient.terminal(current.getStatus()) && after != null && current.getRevision() <= after;
  }

  private boolean callerCancelled() {
    return parent.isCancelled() || Thread.currentThread().isInterrupted() || channel.isShutdown();
  }

  private void cancelStream() {
    Context.CancellableContext context = streamContext;
    if (context != null) {
      context.cancel(null);
    }
  }

  private void release() {
    cancelStream();
    stream = null;
  }

  private void finish() {
    finished = true;
    release();
  }

  private void pause(long nanos) {
    // Listening only while waiting: a watch left unclosed must not stay registered on a
    // long-lived context.
    parent.addListener(onParentCancelled, Runnable::run);
    try {
      wake.await(nanos, TimeUnit.NANOSECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StatewrightException(Status.Code.CANCELLED, "watch of " + name + " interrupted", "", "", Map.of(), e);
    } finally {
      parent.removeListener(onParentCancelled);
    }
  }

  private <T> T inParent(Supplier<T> call) {
    return inContext(parent, call);
  }

  private static <T> T inContext(Context context, Supplier<T> call) {
    Context previous = context.attach();
    try {
      return call.get();
    } finally {
      context.detach(previous);
    }
  }
}
