package dev.statewright.client;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.ErrorInfo;
import com.google.rpc.RetryInfo;
import io.grpc.protobuf.StatusProto;
import java.time.Duration;
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

  /**
   * The delay of the {@code google.rpc.RetryInfo} in a failed call's status details, if any: how
   * long to wait before trying again. A RESOURCE_EXHAUSTED with reason {@code RATE_LIMITED} carries
   * one beside its ErrorInfo.
   */
  public static Optional<Duration> retryDelay(Throwable t) {
    com.google.rpc.Status status = StatusProto.fromThrowable(t);
    if (status == null) {
      return Optional.empty();
    }
    for (Any detail : status.getDetailsList()) {
      if (detail.is(RetryInfo.class)) {
        try {
          com.google.protobuf.Duration delay = detail.unpack(RetryInfo.class).getRetryDelay();
          Duration d = Duration.ofSeconds(delay.getSeconds(), delay.getNanos());
          return d.isNegative() ? Optional.of(Duration.ZERO) : Optional.of(d);
        } catch (InvalidProtocolBufferException e) {
          return Optional.empty();
        }
      }
    }
    return Optional.empty();
  }
}
