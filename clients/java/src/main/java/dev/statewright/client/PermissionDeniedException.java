package dev.statewright.client;

import io.grpc.Status;
import java.util.Map;

/**
 * PERMISSION_DENIED: the caller is known, but its roles (or their scopes: definition names, task
 * queues) do not allow this call. The server answers the same whether or not the instance or task
 * exists.
 */
public final class PermissionDeniedException extends StatewrightException {
  private static final long serialVersionUID = 1L;

  public PermissionDeniedException(String message, String reason, String domain, Map<String, String> metadata, Throwable cause) {
    super(Status.Code.PERMISSION_DENIED, message, reason, domain, metadata, null, cause);
  }
}
