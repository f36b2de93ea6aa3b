package dev.statewright.client.example;

import dev.statewright.client.StatewrightClient;
import dev.statewright.client.StatewrightException;
import dev.statewright.v1.Workflow;
import java.util.Map;

/**
 * Starts a mail-approval instance, approves it and prints each status: WAITING, COMPLETED.
 *
 * <p>Run against {@code $STATEWRIGHT_ADDRESS} (default 127.0.0.1:50051) with the example
 * definitions loaded; {@code STATEWRIGHT_TLS_CA} and {@code STATEWRIGHT_TOKEN}, when set, make it
 * use TLS and a bearer token.
 */
public final class MailApproval {
  private MailApproval() {}

  public static void main(String[] args) {
    try (StatewrightClient client = StatewrightClient.fromEnvironment()) {
      Workflow started = client.start("mail-approval", "", Map.of("topic", "quarterly report"));
      System.out.println(started.getName() + " " + started.getStatus() + " in " + started.getState());

      try {
        client.resume(started.getName(), "approve", started.getRevision() + 41);
      } catch (StatewrightException e) {
        // A stale expected_revision: the ErrorInfo says which revision the server holds.
        System.out.println("stale resume: " + e.reason() + ", actual revision " + e.actualRevision().orElseThrow());
      }

      Workflow done = client.resume(started.getName(), "approve", started.getRevision());
      System.out.println(done.getName() + " " + done.getStatus() + " at revision " + done.getRevision());
    }
  }
}
