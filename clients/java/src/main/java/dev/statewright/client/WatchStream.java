package dev.statewright.client;

import dev.statewright.v1.WatchWorkflowResponse;
import java.util.Iterator;

/**
 * The revisions of one instance, in order, each exactly once, across reconnects; see {@link
 * StatewrightClient#watch(String, WatchOptions)}.
 *
 * <p>{@link #hasNext} blocks until the next revision arrives, returns {@code false} after a
 * terminal revision, and throws {@link StatewrightException} when the watch fails for good. Use it
 * in try-with-resources: {@link #close} (from any thread) ends the stream without reconnecting,
 * after which {@code hasNext} returns {@code false}.
 */
public interface WatchStream extends Iterator<WatchWorkflowResponse>, AutoCloseable {
  @Override
  void close();
}
