package dev.statewright.client;

import dev.statewright.v1.Workflow;
import io.grpc.Status;
import java.time.Duration;
import java.util.Map;

/**
 * {@link StatewrightClient#execute}'s timeout passed before the instance rested or finished. The
 * instance was started and goes on running; {@link #workflow()} is it as last seen. Its {@link
 * #code()} is DEADLINE_EXCEEDED, like any deadline.
 */
public final class ExecutionTimedOutException extends StatewrightException {
  private static final long serialVersionUID = 1L;

  private final transient Workflow workflow;

  public ExecutionTimedOutException(Workflow workflow, Until until, Duration timeout) {
    super(
        Status.Code.DEADLINE_EXCEEDED,
        String.format(
            "%s did not %s within %s; it is %s in \"%s\" and goes on running",
            workflow.getName(),
            until == Until.FINISH ? "finish" : "rest",
            timeout,
            workflow.getStatus().name().replace("WORKFLOW_STATUS_", ""),
            workflow.getState()),
        "",
        "",
        Map.of(),
        null);
    this.workflow = workflow;
  }

  /** The instance as last seen. */
  public Workflow workflow() {
    return workflow;
  }
}
