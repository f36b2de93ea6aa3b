package dev.statewright.client;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.LongSupplier;

/**
 * Exponential backoff with equal jitter, bounded by a time budget since the last progress.
 *
 * <p>Mirrors the service config's policy (0.1 s doubling to 2 s) for what gRPC's own retries
 * cannot do: resume a stream that already delivered messages, and keep a {@link Worker} polling
 * and reporting through an outage longer than a few retries. Not thread-safe.
 */
final class Backoff {
  /** The longest RetryInfo delay honoured as given. */
  static final Duration MAX_RETRY_DELAY = Duration.ofMinutes(5);

  private final long initialNanos;
  private final long maxNanos;
  private final long budgetNanos;
  private final LongSupplier clock;
  private long nextNanos;
  private boolean counting;
  private long sinceNanos;

  /** Without a budget: {@link #delayNanos} never gives up. */
  Backoff(Duration initial, Duration maximum) {
    this(initial, maximum, Duration.ofNanos(Long.MAX_VALUE), System::nanoTime);
  }

  Backoff(Duration initial, Duration maximum, Duration budget) {
    this(initial, maximum, budget, System::nanoTime);
  }

  Backoff(Duration initial, Duration maximum, Duration budget, LongSupplier clock) {
    this.initialNanos = initial.toNanos();
    this.maxNanos = maximum.toNanos();
    this.budgetNanos = budget.toNanos();
    this.clock = clock;
  }

  /** Progress: the next failure starts from the initial delay with a fresh budget. */
  void reset() {
    nextNanos = 0;
    counting = false;
  }

  /**
   * Nanoseconds to wait before the next attempt, or -1 once the budget is spent. The budget is
   * counted from the first failure after progress, not from when the stream opened: a watch may
   * rightly sit quiet for hours before its connection drops.
   */
  long delayNanos() {
    long now = clock.getAsLong();
    if (!counting) {
      counting = true;
      sinceNanos = now;
    }
    if (now - sinceNanos >= budgetNanos) {
      return -1;
    }
    nextNanos = nextNanos == 0 ? initialNanos : nextNanos > maxNanos / 2 ? maxNanos : nextNanos * 2;
    // Equal jitter: never less than half the step, so a restarting server is not hammered.
    long half = nextNanos / 2;
    return half + ThreadLocalRandom.current().nextLong(nextNanos - half + 1);
  }

  /**
   * {@code delay}, or the failure's RetryInfo delay when that is longer (at most {@link
   * #MAX_RETRY_DELAY}: a server's odd answer must not park a caller for hours).
   */
  static long atLeastRetryDelay(long delay, Throwable failure) {
    if (!(failure instanceof StatewrightException e) || e.retryDelay().isEmpty()) {
      return delay;
    }
    Duration asked = e.retryDelay().get();
    long nanos = asked.compareTo(MAX_RETRY_DELAY) > 0 ? MAX_RETRY_DELAY.toNanos() : asked.toNanos();
    return Math.max(delay, nanos);
  }
}
