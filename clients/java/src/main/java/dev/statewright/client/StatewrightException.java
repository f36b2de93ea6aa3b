package dev.statewright.client;

import com.google.rpc.ErrorInfo;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A failed Statewright call: the gRPC code plus the ErrorInfo reason and metadata to branch on.
 *
 * <pre>{@code
 * try {
 *   client.resume(name, "approve", staleRevision);
 * } catch (StatewrightException e) {
 *   if (e.isReason("REVISION_MISMATCH")) {
 *     long actual = e.actualRevision().orElseThrow();
 *   }
 * }
 * }</pre>
 *
 * <p>Two codes have types of their own, so that a missing or refused credential can be caught
 * apart from everything else: {@link UnauthenticatedException} (UNAUTHENTICATED: no token, or one
 * the server does not accept) and {@link PermissionDeniedException} (PERMISSION_DENIED: the
 * caller's roles do not allow the call). A refusal that says when to try again (RESOURCE_EXHAUSTED
 * {@code RATE_LIMITED}) has {@link #retryDelay()}.
 */
public class StatewrightException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String reason;
  private final String domain;
  private final Map<String, String> metadata;
  private final Duration retryDelay;

  public StatewrightException(
      Status.Code code, String message, String reason, String domain, Map<String, String> metadata, Throwable cause) {
    this(code, message, reason, domain, metadata, null, cause);
  }

  /** With the delay of a RetryInfo; {@code retryDelay} may be null (none). */
  public StatewrightException(
      Status.Code code,
      String message,
      String reason,
      String domain,
      Map<String, String> metadata,
      Duration retryDelay,
      Throwable cause) {
    super(code + (reason.isEmpty() ? "" : "/" + reason) + ": " + message, cause);
    this.code = code;
    this.reason = reason;
    this.domain = domain;
    this.metadata = Map.copyOf(metadata);
    this.retryDelay = retryDelay;
  }

  /**
   * Wraps a failed call, reading its ErrorInfo (empty reason when there is none) and RetryInfo: an
   * {@link UnauthenticatedException} or {@link PermissionDeniedException} for those codes.
   */
  public static StatewrightException from(StatusRuntimeException e) {
    Status status = e.getStatus();
    Optional<ErrorInfo> info = ErrorInfos.fromThrowable(e);
    String message = status.getDescription() == null ? status.getCode().name() : status.getDescription();
    // A failure on this side (a TLS handshake, a refused connection) says why only in its cause:
    // "io exception" alone does not tell a wrong CA from a server that is down.
    Throwable root = status.getCause();
    while (root != null && root.getCause() != null && root.getCause() != root) {
      root = root.getCause();
    }
    if (root != null && root.getMessage() != null && !message.contains(root.getMessage())) {
      message = message + " (" + root.getMessage() + ")";
    }
    String reason = info.map(ErrorInfo::getReason).orElse("");
    String domain = info.map(ErrorInfo::getDomain).orElse("");
    Map<String, String> metadata = info.map(ErrorInfo::getMetadataMap).orElse(Map.of());
    Duration delay = ErrorInfos.retryDelay(e).orElse(null);
    return switch (status.getCode()) {
      case UNAUTHENTICATED -> new UnauthenticatedException(message, reason, domain, metadata, e);
      case PERMISSION_DENIED -> new PermissionDeniedException(message, reason, domain, metadata, e);
      default -> new StatewrightException(status.getCode(), message, reason, domain, metadata, delay, e);
    };
  }

  public Status.Code code() {
    return code;
  }

  /** The ErrorInfo reason, e.g. {@code REVISION_MISMATCH}; empty when the status had none. */
  public String reason() {
    return reason;
  }

  public String domain() {
    return domain;
  }

  public Map<String, String> metadata() {
    return metadata;
  }

  /**
   * How long the server asked the caller to wait before trying again (its RetryInfo), e.g. on
   * RESOURCE_EXHAUSTED {@code RATE_LIMITED}: the time until the caller's rate allows another call.
   */
  public Optional<Duration> retryDelay() {
    return Optional.ofNullable(retryDelay);
  }

  /** RESOURCE_EXHAUSTED {@code RATE_LIMITED}: over the caller's request rate; see {@link #retryDelay()}. */
  public boolean isRateLimited() {
    return code == Status.Code.RESOURCE_EXHAUSTED && isReason("RATE_LIMITED");
  }

  public boolean isReason(String candidate) {
    return reason.equals(candidate);
  }

  /** For REVISION_MISMATCH: the revision the server holds. */
  public OptionalLong actualRevision() {
    String value = metadata.get("actual_revision");
    if (value == null) {
      return OptionalLong.empty();
    }
    try {
      return OptionalLong.of(Long.parseLong(value));
    } catch (NumberFormatException e) {
      return OptionalLong.empty();
    }
  }
}
