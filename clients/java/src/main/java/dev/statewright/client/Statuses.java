package dev.statewright.client;

import com.google.protobuf.Internal.EnumLite;
import dev.statewright.v1.TaskStatus;
import dev.statewright.v1.WorkflowStatus;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Statuses read from text in either spelling, in any case: the short form the CLI and the
 * Python and TypeScript clients print ({@code WAITING}) or the proto's name ({@code
 * WORKFLOW_STATUS_WAITING}), as the HTTP API's {@code ?status=} accepts both.
 */
public final class Statuses {
  private static final String WORKFLOW_PREFIX = "WORKFLOW_STATUS_";
  private static final String TASK_PREFIX = "TASK_STATUS_";

  private Statuses() {}

  /** {@code WORKFLOW_STATUS_WAITING} for "WAITING", "waiting" or "WORKFLOW_STATUS_WAITING". */
  public static WorkflowStatus parseWorkflowStatus(String text) {
    return parse(WorkflowStatus.values(), WORKFLOW_PREFIX, "workflow status", text);
  }

  /** {@code TASK_STATUS_LEASED} for "LEASED", "leased" or "TASK_STATUS_LEASED". */
  public static TaskStatus parseTaskStatus(String text) {
    return parse(TaskStatus.values(), TASK_PREFIX, "task status", text);
  }

  /** The short form of a workflow status, {@code WAITING} for {@code WORKFLOW_STATUS_WAITING}. */
  public static String shortName(WorkflowStatus status) {
    return status.name().substring(WORKFLOW_PREFIX.length());
  }

  private static <E extends Enum<E> & EnumLite> E parse(
      E[] values, String prefix, String what, String text) {
    String name = text == null ? "" : text.strip().toUpperCase(Locale.ROOT);
    String full = name.startsWith(prefix) ? name : prefix + name;
    List<String> choices = new ArrayList<>();
    for (E value : values) {
      if (value.name().equals("UNRECOGNIZED")) {
        continue;
      }
      if (value.name().equals(full)) {
        return value;
      }
      if (value.getNumber() != 0) {
        choices.add(value.name().substring(prefix.length()));
      }
    }
    throw new IllegalArgumentException(
        "\"" + text + "\" is not a " + what + ": one of " + String.join(", ", choices)
            + " (any case, with or without the " + prefix + " prefix)");
  }
}
