package dev.statewright.client;

import com.google.gson.Gson;
import com.google.gson.reflect.TypeToken;
import io.grpc.ManagedChannelBuilder;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The gRPC service config shared by every Statewright client ({@code clients/service-config.json},
 * packaged in the jar): retries for UNAVAILABLE only, with backoff, and per-method timeouts.
 */
public final class ServiceConfig {
  static final String RESOURCE = "service-config.json";
  static final String SERVICE = "statewright.v1.WorkflowService";
  static final String TASK_SERVICE = "statewright.v1.TaskService";
  static final String BATCH_SERVICE = "statewright.v1.BatchService";

  private static final Map<String, ?> CONFIG = parse(read());

  private ServiceConfig() {}

  /**
   * The config as the map {@link ManagedChannelBuilder#defaultServiceConfig} wants: JSON objects
   * as maps, arrays as lists, numbers as {@code Double} (Gson's default, which gRPC requires).
   */
  public static Map<String, ?> asMap() {
    return CONFIG;
  }

  /** Installs the service config on a channel builder and turns retries on. */
  public static <T extends ManagedChannelBuilder<?>> T apply(T builder) {
    // The builder methods return the same instance; returning `builder` keeps the caller's type.
    builder.defaultServiceConfig(CONFIG).enableRetry();
    return builder;
  }

  /** The config's {@code timeout} per WorkflowService method name, e.g. {@code GetWorkflow -> 10s}. */
  public static Map<String, Duration> methodTimeouts() {
    return methodTimeouts(SERVICE);
  }

  /**
   * The config's {@code timeout} per method name of one service, e.g. {@code
   * methodTimeouts("statewright.v1.TaskService")} gives {@code CompleteTask -> 30s}.
   */
  public static Map<String, Duration> methodTimeouts(String service) {
    Map<String, Duration> timeouts = new HashMap<>();
    for (Object entry : (List<?>) CONFIG.get("methodConfig")) {
      Map<?, ?> methodConfig = (Map<?, ?>) entry;
      Object timeout = methodConfig.get("timeout");
      if (timeout == null) {
        continue;
      }
      Duration duration = parseDuration((String) timeout);
      for (Object name : (List<?>) methodConfig.get("name")) {
        Map<?, ?> n = (Map<?, ?>) name;
        if (service.equals(n.get("service")) && n.get("method") != null) {
          timeouts.put((String) n.get("method"), duration);
        }
      }
    }
    return Collections.unmodifiableMap(timeouts);
  }

  /** A proto3 JSON duration such as {@code "10s"} or {@code "0.1s"}. */
  static Duration parseDuration(String text) {
    if (!text.endsWith("s")) {
      throw new IllegalArgumentException("not a proto3 JSON duration: " + text);
    }
    double seconds = Double.parseDouble(text.substring(0, text.length() - 1));
    return Duration.ofNanos(Math.round(seconds * 1e9));
  }

  static Map<String, ?> parse(String json) {
    Map<String, Object> map = new Gson().fromJson(json, new TypeToken<Map<String, Object>>() {}.getType());
    return Collections.unmodifiableMap(map);
  }

  private static String read() {
    try (InputStream in = ServiceConfig.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new IllegalStateException(RESOURCE + " is missing from the jar");
      }
      try (Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8)) {
        StringBuilder text = new StringBuilder();
        char[] buffer = new char[4096];
        for (int n; (n = reader.read(buffer)) != -1; ) {
          text.append(buffer, 0, n);
        }
        return text.toString();
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
