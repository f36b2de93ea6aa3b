package dev.statewright.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import io.grpc.protobuf.StatusProto;
import java.util.Optional;

/**
 * Reads the {@code google.rpc.ErrorInfo} that every Statewright error carries (domain {@code
 * statewright.dev}, an UPPER_SNAKE {@code reason}, dynamic values in {@code metadata}).
 */
public final class ErrorInfos {
  /** The ErrorInfo domain of every error the service sends. */
  public static final String DOMAIN = "statewright.dev";

  private ErrorInfos() {}

  /**
   * The ErrorInfo in a failed call's {@code grpc-status-details-bin} trailer, if any. Empty for
   * failures that never reached a server (connection refused, client-side deadline).
   */
  public static Optional<ErrorInfo> fromThrowable(Throwable t) {
    com.google.rpc.Status status = StatusProto.fromThrowable(t);
    return status == null ? Optional.empty() : fromStatus(status);
  }

  /** The first ErrorInfo packed in a {@code google.rpc.Status}, e.g. {@code Workflow.error}. */
  public static Optional<ErrorInfo> fromStatus(com.google.rpc.Status status) {
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          return Optional.of(detail.unpack(ErrorInfo.class));
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }
}
