package dev.statewright.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * How {@link StatewrightClient#watch(String, WatchOptions)} opens and resumes a watch. Immutable:
 * every {@code with…} method returns a copy.
 *
 * <pre>{@code
 * WatchOptions options = WatchOptions.defaults().withAfterRevision(3).withReconnectBudget(Duration.ofSeconds(10));
 * }</pre>
 */
public final class WatchOptions {
  private static final WatchOptions DEFAULTS =
      new WatchOptions(null, null, Duration.ofSeconds(30), Duration.ofMillis(100), Duration.ofSeconds(2));

  private final Long afterRevision;
  private final Duration streamTimeout;
  private final Duration reconnectBudget;
  private final Duration initialBackoff;
  private final Duration maxBackoff;

  private WatchOptions(
      Long afterRevision, Duration streamTimeout, Duration reconnectBudget, Duration initialBackoff, Duration maxBackoff) {
    this.afterRevision = afterRevision;
    this.streamTimeout = streamTimeout;
    this.reconnectBudget = reconnectBudget;
    this.initialBackoff = initialBackoff;
    this.maxBackoff = maxBackoff;
  }

  /**
   * No {@code after_revision} (the first message is CURRENT), no stream deadline, a 30 s reconnect
   * budget, and reconnect delays of 0.1 s doubling to 2 s: the service config's retry policy.
   */
  public static WatchOptions defaults() {
    return DEFAULTS;
  }

  /** Replays every revision after {@code revision} first, instead of starting with CURRENT. */
  public WatchOptions withAfterRevision(long revision) {
    if (revision < 0) {
      throw new IllegalArgumentException("afterRevision must not be negative: " + revision);
    }
    return new WatchOptions(revision, streamTimeout, reconnectBudget, initialBackoff, maxBackoff);
  }

  /**
   * A deadline for each stream ({@code null}: none, the default). A stream that runs out of it
   * ends the watch with DEADLINE_EXCEEDED; it is not resumed.
   */
  public WatchOptions withStreamTimeout(Duration timeout) {
    if (timeout != null) {
      requirePositive("streamTimeout", timeout);
    }
    return new WatchOptions(afterRevision, timeout, reconnectBudget, initialBackoff, maxBackoff);
  }

  /** How long reconnects may go on without a new revision before the watch gives up. */
  public WatchOptions withReconnectBudget(Duration budget) {
    requireNotNegative("reconnectBudget", budget);
    return new WatchOptions(afterRevision, streamTimeout, budget, initialBackoff, maxBackoff);
  }

  /** The first reconnect delay, doubling up to {@code maximum} (each with equal jitter). */
  public WatchOptions withBackoff(Duration initial, Duration maximum) {
    requireNotNegative("initialBackoff", initial);
    requireNotNegative("maxBackoff", maximum);
    if (maximum.compareTo(initial) < 0) {
      throw new IllegalArgumentException("maxBackoff " + maximum + " is shorter than initialBackoff " + initial);
    }
    return new WatchOptions(afterRevision, streamTimeout, reconnectBudget, initial, maximum);
  }

  public OptionalLong afterRevision() {
    return afterRevision == null ? OptionalLong.empty() : OptionalLong.of(afterRevision);
  }

  public Optional<Duration> streamTimeout() {
    return Optional.ofNullable(streamTimeout);
  }

  public Duration reconnectBudget() {
    return reconnectBudget;
  }

  public Duration initialBackoff() {
    return initialBackoff;
  }

  public Duration maxBackoff() {
    return maxBackoff;
  }

  private static void requireNotNegative(String what, Duration value) {
    Objects.requireNonNull(value, what);
    if (value.isNegative()) {
      throw new IllegalArgumentException(what + " must not be negative: " + value);
    }
  }

  private static void requirePositive(String what, Duration value) {
    requireNotNegative(what, value);
    if (value.isZero()) {
      throw new IllegalArgumentException(what + " must be positive");
    }
  }

  @Override
  public String toString() {
    return "WatchOptions{afterRevision=" + afterRevision + ", streamTimeout=" + streamTimeout
        + ", reconnectBudget=" + reconnectBudget + ", backoff=" + initialBackoff + ".." + maxBackoff + "}";
  }
}
