// One worker process of bench/task_bench.py, in Java: the loop of its Python `work`, on
// the Java client's generated stubs, so that the task benchmark can show the service's
// figures under a JVM worker as well as a Python and a Go one. task_bench.py runs it as a
// single-file program (`java -cp CLASSPATH TaskWorker.java ...`) on the Java client's
// jar and its dependencies (bench/javaworker/classpath.sh builds both once):
//
//   TaskWorker TARGETS BEGIN END STOP POLLERS QUEUE DEFINITION
//
// TARGETS is HOST:PORT[,HOST:PORT...]; poller p polls target p mod their number for up to
// 16 tasks, completes every task it gets at once (with a request id) and, when a completion
// ends its instance, starts a new one through the same target until STOP. Completions in
// [BEGIN, END) (Unix seconds) are counted. It prints task_bench.py's worker report as one
// JSON object: steps, completed_workflows, errors, to_start and end_to_end (seconds).

import dev.statewright.v1.CompleteTaskRequest;
import dev.statewright.v1.CompleteTaskResponse;
import dev.statewright.v1.PollTasksRequest;
import dev.statewright.v1.PollTasksResponse;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.Task;
import dev.statewright.v1.TaskServiceGrpc;
import dev.statewright.v1.Workflow;
import dev.statewright.v1.WorkflowServiceGrpc;
import dev.statewright.v1.WorkflowStatus;
import io.grpc.ManagedChannel;
import io.grpc.ManagedChannelBuilder;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

public final class TaskWorker {
  private static final int SAMPLE = 20_000; // latencies kept, as the Python worker keeps

  private final long beginNs;
  private final long endNs;
  private final long stopNs;
  private final String queue;
  private final String definition;
  private final List<TaskServiceGrpc.TaskServiceBlockingStub> tasks = new ArrayList<>();
  private final List<WorkflowServiceGrpc.WorkflowServiceBlockingStub> flows = new ArrayList<>();
  private final ExecutorService completions = Executors.newCachedThreadPool();
  private int steps;
  private int completedWorkflows;
  private int errors;
  private final List<Double> toStart = new ArrayList<>();
  private final List<Double> endToEnd = new ArrayList<>();

  private TaskWorker(String[] a, List<ManagedChannel> channels) {
    beginNs = toNanos(a[1]);
    endNs = toNanos(a[2]);
    stopNs = toNanos(a[3]);
    queue = a[5];
    definition = a[6];
    for (ManagedChannel channel : channels) {
      tasks.add(TaskServiceGrpc.newBlockingStub(channel));
      flows.add(WorkflowServiceGrpc.newBlockingStub(channel));
    }
  }

  private static long toNanos(String unixSeconds) {
    return (long) (Double.parseDouble(unixSeconds) * 1e9);
  }

  private static long now() {
    java.time.Instant t = java.time.Instant.now();
    return t.getEpochSecond() * 1_000_000_000L + t.getNano();
  }

  private static long nanos(com.google.protobuf.Timestamp t) {
    return t.getSeconds() * 1_000_000_000L + t.getNanos();
  }

  private boolean counted(long t) {
    return t >= beginNs && t < endNs;
  }

  private void complete(int n, Task task) {
    long received = now();
    CompleteTaskResponse answer;
    try {
      answer =
          tasks
              .get(n)
              .withDeadlineAfter(30, TimeUnit.SECONDS)
              .completeTask(
                  CompleteTaskRequest.newBuilder()
                      .setName(task.getName())
                      .setLeaseToken(task.getLeaseToken())
                      .setRequestId(task.getName() + "#c")
                      .build());
    } catch (io.grpc.StatusRuntimeException e) {
      synchronized (this) {
        if (counted(received)) {
          errors++;
        }
      }
      return;
    }
    long at = now();
    Workflow workflow = answer.getWorkflow();
    boolean ended = workflow.getStatus() == WorkflowStatus.WORKFLOW_STATUS_COMPLETED;
    synchronized (this) {
      if (counted(at)) {
        steps++;
        if (toStart.size() < SAMPLE) {
          toStart.add((received - nanos(task.getScheduleTime())) / 1e9);
        }
        if (ended) {
          completedWorkflows++;
          if (endToEnd.size() < SAMPLE) {
            endToEnd.add((at - nanos(workflow.getCreateTime())) / 1e9);
          }
        }
      }
    }
    if (ended && at < stopNs) {
      try {
        flows
            .get(n)
            .withDeadlineAfter(30, TimeUnit.SECONDS)
            .startWorkflow(
                StartWorkflowRequest.newBuilder().setDefinition(definition).setVersion(1).build());
      } catch (io.grpc.StatusRuntimeException e) {
        // One instance fewer in flight, as with the Python worker.
      }
    }
  }

  private void poll(int index) {
    int n = index % tasks.size();
    PollTasksRequest request =
        PollTasksRequest.newBuilder()
            .setQueue(queue)
            .setIdentity("bench-java-" + ProcessHandle.current().pid() + "-" + index)
            .setMaxTasks(16)
            .setWait(com.google.protobuf.Duration.newBuilder().setSeconds(1))
            .build();
    while (now() < stopNs) {
      PollTasksResponse polled;
      try {
        polled = tasks.get(n).withDeadlineAfter(10, TimeUnit.SECONDS).pollTasks(request);
      } catch (io.grpc.StatusRuntimeException e) {
        sleep(50 + ThreadLocalRandom.current().nextInt(50));
        continue;
      }
      List<Future<?>> batch = new ArrayList<>();
      for (Task task : polled.getTasksList()) {
        batch.add(completions.submit(() -> complete(n, task)));
      }
      for (Future<?> f : batch) {
        try {
          f.get();
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }
    }
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static String json(List<Double> values) {
    StringBuilder b = new StringBuilder("[");
    for (int i = 0; i < values.size(); i++) {
      b.append(i == 0 ? "" : ",").append(values.get(i));
    }
    return b.append(']').toString();
  }

  public static void main(String[] a) throws Exception {
    if (a.length != 7) {
      System.err.println("usage: TaskWorker TARGETS BEGIN END STOP POLLERS QUEUE DEFINITION");
      System.exit(2);
    }
    List<ManagedChannel> channels = new ArrayList<>();
    for (String target : a[0].split(",")) {
      channels.add(ManagedChannelBuilder.forTarget(target).usePlaintext().build());
    }
    TaskWorker worker = new TaskWorker(a, channels);
    int pollers = Integer.parseInt(a[4]);
    List<Thread> threads = new ArrayList<>();
    for (int p = 0; p < pollers; p++) {
      int index = p;
      Thread t = new Thread(() -> worker.poll(index), "poller-" + p);
      t.start();
      threads.add(t);
    }
    for (Thread t : threads) {
      t.join();
    }
    worker.completions.shutdown();
    for (ManagedChannel channel : channels) {
      channel.shutdown().awaitTermination(5, TimeUnit.SECONDS);
    }
    synchronized (worker) {
      System.out.printf(
          "{\"steps\": %d, \"completed_workflows\": %d, \"errors\": %d, \"to_start\": %s,"
              + " \"end_to_end\": %s}%n",
          worker.steps,
          worker.completedWorkflows,
          worker.errors,
          json(worker.toStart),
          json(worker.endToEnd));
    }
  }
}
