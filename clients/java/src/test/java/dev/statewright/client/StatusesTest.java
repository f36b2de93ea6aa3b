package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.statewright.v1.TaskStatus;
import dev.statewright.v1.WorkflowStatus;
import org.junit.jupiter.api.Test;

class StatusesTest {
  @Test
  void aWorkflowStatusReadsFromEitherSpellingInAnyCase() {
    for (String text :
        new String[] {"WAITING", "waiting", " Waiting ", "WORKFLOW_STATUS_WAITING", "workflow_status_waiting"}) {
      assertEquals(WorkflowStatus.WORKFLOW_STATUS_WAITING, Statuses.parseWorkflowStatus(text), text);
    }
    IllegalArgumentException unknown =
        assertThrows(IllegalArgumentException.class, () -> Statuses.parseWorkflowStatus("sleeping"));
    assertTrue(
        unknown.getMessage().contains("one of RUNNING, WAITING, COMPLETED, FAILED, CANCELLED"),
        unknown.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Statuses.parseWorkflowStatus("UNRECOGNIZED"));
    assertEquals("COMPLETED", Statuses.shortName(WorkflowStatus.WORKFLOW_STATUS_COMPLETED));
  }

  @Test
  void aTaskStatusReadsFromEitherSpelling() {
    assertEquals(TaskStatus.TASK_STATUS_TIMED_OUT, Statuses.parseTaskStatus("timed_out"));
    assertEquals(TaskStatus.TASK_STATUS_TIMED_OUT, Statuses.parseTaskStatus("TASK_STATUS_TIMED_OUT"));
    assertThrows(IllegalArgumentException.class, () -> Statuses.parseTaskStatus("DONE"));
  }
}
