package dev.statewright.client;

import java.util.Map;

/**
 * Runs one attempt of a task for a {@link Worker}.
 *
 * <p>The map returned becomes the task's {@code result} (plain data: maps, lists, strings,
 * numbers, booleans, null; {@code null} is an empty result). Throwing fails the attempt: a {@link
 * TaskFailure} with its own type and options, anything else retryably with {@code type} = the
 * exception's simple class name.
 */
@FunctionalInterface
public interface TaskHandler {
  Map<String, ?> handle(TaskContext task) throws Exception;
}
