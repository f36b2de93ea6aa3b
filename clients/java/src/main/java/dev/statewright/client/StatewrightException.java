package dev.statewright.client;

import com.google.rpc.ErrorInfo;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
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
 */
public final class StatewrightException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  private final Status.Code code;
  private final String reason;
  private final String domain;
  private final Map<String, String> metadata;

  public StatewrightException(
      Status.Code code, String message, String reason, String domain, Map<String, String> metadata, Throwable cause) {
    super(code + (reason.isEmpty() ? "" : "/" + reason) + ": " + message, cause);
    this.code = code;
    this.reason = reason;
    this.domain = domain;
    this.metadata = Map.copyOf(metadata);
  }

  /** Wraps a failed call, reading its ErrorInfo (empty reason when there is none). */
  public static StatewrightException from(StatusRuntimeException e) {
    Status status = e.getStatus();
    Optional<ErrorInfo> info = ErrorInfos.fromThrowable(e);
    String message = status.getDescription() == null ? status.getCode().name() : status.getDescription();
    return new StatewrightException(
        status.getCode(),
        message,
        info.map(ErrorInfo::getReason).orElse(""),
        info.map(ErrorInfo::getDomain).orElse(""),
        info.map(ErrorInfo::getMetadataMap).orElse(Map.of()),
        e);
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
