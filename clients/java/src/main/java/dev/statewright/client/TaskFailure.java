package dev.statewright.client;

import com.google.protobuf.Struct;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Thrown by a {@link TaskHandler} to fail its attempt with a type of its choosing: the {@code
 * error.type} a definition's retry policy ({@code non_retryable}) and {@code task_failed} guards
 * match on, a message, details, and optionally {@code non_retryable} (give up now) or a {@code
 * retry_delay} (instead of the policy's backoff).
 *
 * <pre>{@code
 * throw TaskFailure.nonRetryable("CARD_DECLINED", "amount " + amount + " over the limit");
 *
 * throw TaskFailure.builder("RATE_LIMITED")
 *     .message("provider said slow down")
 *     .details(Map.of("provider", "acme"))
 *     .retryDelay(Duration.ofSeconds(30))
 *     .build();
 * }</pre>
 *
 * <p>Any other exception a handler throws fails the attempt too, retryably, with {@code type} = its
 * class's simple name (e.g. {@code IllegalStateException}). Subclass it for failures of your own
 * domain; the type is always the one given here.
 */
public class TaskFailure extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final String type;
  private final transient Struct details;
  private final boolean nonRetryable;
  private final transient Duration retryDelay;
  private final transient Instant closeKeyUntil;

  /** A retryable failure of {@code type} (required, e.g. {@code PROVIDER_DOWN}). */
  public TaskFailure(String type, String message) {
    this(builder(type).message(message));
  }

  /** A retryable failure of {@code type} caused by {@code cause}. */
  public TaskFailure(String type, String message, Throwable cause) {
    this(builder(type).message(message).cause(cause));
  }

  protected TaskFailure(Builder builder) {
    super(builder.message, builder.cause);
    this.type = builder.type;
    this.details = builder.details;
    this.nonRetryable = builder.nonRetryable;
    this.retryDelay = builder.retryDelay;
    this.closeKeyUntil = builder.closeKeyUntil;
  }

  /** A failure the task must not be retried after, whatever its retry policy says. */
  public static TaskFailure nonRetryable(String type, String message) {
    return builder(type).message(message).nonRetryable().build();
  }

  public static Builder builder(String type) {
    return new Builder(type);
  }

  /** The {@code error.type}, as given. */
  public String type() {
    return type;
  }

  /** The {@code error.details} (empty unless set). */
  public Map<String, Object> details() {
    return Structs.toMap(detailsStruct());
  }

  Struct detailsStruct() {
    return details == null ? Struct.getDefaultInstance() : details;
  }

  /** Whether the task gives up now instead of being retried. */
  public boolean nonRetryable() {
    return nonRetryable;
  }

  /** The delay before the retry, when the handler chose one over the policy's backoff. */
  public Optional<Duration> retryDelay() {
    return Optional.ofNullable(retryDelay);
  }

  /**
   * Until when the task's concurrency key is closed on its queue (no task of the key is
   * handed out before it), when the handler chose to close it.
   */
  public Optional<Instant> closeKeyUntil() {
    return Optional.ofNullable(closeKeyUntil);
  }

  /** Builds a {@link TaskFailure}; only the type is required. */
  public static final class Builder {
    private final String type;
    private String message = "";
    private Struct details = Struct.getDefaultInstance();
    private boolean nonRetryable;
    private Duration retryDelay;
    private Instant closeKeyUntil;
    private Throwable cause;

    private Builder(String type) {
      Objects.requireNonNull(type, "type");
      if (type.isBlank()) {
        throw new IllegalArgumentException("a task failure needs a type");
      }
      this.type = type;
    }

    public Builder message(String message) {
      this.message = message == null ? "" : message;
      return this;
    }

    /** Plain data (maps, lists, strings, numbers, booleans, null), converted at once. */
    public Builder details(Map<String, ?> details) {
      this.details = Structs.toStruct(details);
      return this;
    }

    public Builder nonRetryable() {
      return nonRetryable(true);
    }

    public Builder nonRetryable(boolean nonRetryable) {
      this.nonRetryable = nonRetryable;
      return this;
    }

    /** Retry after this long (zero: at once) instead of the policy's backoff. */
    public Builder retryDelay(Duration delay) {
      Objects.requireNonNull(delay, "delay");
      if (delay.isNegative()) {
        throw new IllegalArgumentException("a retry delay cannot be negative: " + delay);
      }
      this.retryDelay = delay;
      return this;
    }

    /**
     * Close the task's concurrency key on its queue until {@code until} (an API's
     * Retry-After, say): no task of that key is handed out before then.
     */
    public Builder closeKeyUntil(Instant until) {
      this.closeKeyUntil = Objects.requireNonNull(until, "until");
      return this;
    }

    public Builder cause(Throwable cause) {
      this.cause = cause;
      return this;
    }

    public TaskFailure build() {
      return new TaskFailure(this);
    }
  }
}
