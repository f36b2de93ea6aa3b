package dev.statewright.client.conformance;

import dev.statewright.client.StatewrightClient;
import dev.statewright.client.PermissionDeniedException;
import dev.statewright.client.StatewrightException;
import dev.statewright.client.Structs;
import dev.statewright.client.TaskFailure;
import dev.statewright.client.TaskHandler;
import dev.statewright.client.UnauthenticatedException;
import dev.statewright.client.WatchOptions;
import dev.statewright.client.Worker;
import dev.statewright.v1.GetDiagnosticsResponse;
import dev.statewright.v1.ListTasksRequest;
import dev.statewright.v1.ListWorkflowsRequest;
import dev.statewright.v1.ListWorkflowsResponse;
import dev.statewright.v1.ResumeWorkflowRequest;
import dev.statewright.v1.SignalWorkflowRequest;
import dev.statewright.v1.SignalWorkflowResponse;
import dev.statewright.v1.IfExistsPolicy;
import dev.statewright.v1.StartWorkflowRequest;
import dev.statewright.v1.Task;
import dev.statewright.v1.WatchWorkflowResponse;
import dev.statewright.v1.Workflow;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

/**
 * Executes {@code clients/conformance/scenario.yaml} through {@link StatewrightClient} against
 * {@code $STATEWRIGHT_ADDRESS} (or {@code $STATEWRIGHT_TARGET}), with the TLS options and token the
 * environment gives ({@link StatewrightClient.Builder#fromEnvironment(Map)}). A step passes only if every expectation holds; an unknown op,
 * request field or expectation key fails it, so a scenario change cannot pass unnoticed. {@code
 * RunWorker} steps run the client's own {@link Worker}, as a user would. Prints {@code
 * conformance: N passed, M failed} and exits 1 on any failure.
 */
public final class ConformanceRunner {
  static final Duration WATCH_FIRST = Duration.ofSeconds(10);
  static final Duration WATCH_END = Duration.ofSeconds(20);
  static final Duration WORKER_TIMEOUT = Duration.ofSeconds(60);
  static final Duration WORKER_CHECK_EVERY = Duration.ofMillis(100);
  private static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Za-z0-9_.]+)}");
  private static final Pattern DURATION = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h)");
  // A handler's `${input.KEY}` refers to the task it runs, so it outlives the step's substitution.
  private static final String INPUT_PREFIX = "input.";
  private static final Set<String> TERMINAL = Set.of("COMPLETED", "FAILED", "CANCELLED");

  private final StatewrightClient client;
  private final String runId;
  private final PrintStream out;
  private final Map<String, Map<String, Object>> saved = new LinkedHashMap<>();
  private final Map<String, BackgroundWatch> watches = new LinkedHashMap<>();
  int passed;
  int failed;

  public ConformanceRunner(StatewrightClient client, String runId, PrintStream out) {
    this.client = client;
    this.runId = runId;
    this.out = out;
  }

  /** A step did not behave as the scenario says. */
  static final class Mismatch extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Mismatch(String message) {
      super(message);
    }
  }

  public static void main(String[] args) throws IOException {
    Map<String, String> env = System.getenv();
    String target = env.getOrDefault(StatewrightClient.ENV_ADDRESS, "");
    if (target.isBlank()) {
      target = env.getOrDefault(StatewrightClient.ENV_TARGET, "");
    }
    if (target.isBlank()) {
      System.err.println("set STATEWRIGHT_ADDRESS (or STATEWRIGHT_TARGET) to the server's host:port");
      System.exit(2);
    }
    StatewrightClient.Builder builder = StatewrightClient.builder().fromEnvironment(env);
    Path scenario = Path.of(args.length > 0 ? args[0] : "../conformance/scenario.yaml");
    Map<String, Object> data = load(scenario);
    String runId = System.currentTimeMillis() / 1000 + "-j" + Integer.toHexString(new SecureRandom().nextInt(1 << 24));
    int failures;
    String security =
        (env.getOrDefault(StatewrightClient.ENV_TLS_CA, "").isBlank() && env.getOrDefault(StatewrightClient.ENV_TLS_CERT, "").isBlank()
                ? "plaintext"
                : "TLS")
            + (env.getOrDefault(StatewrightClient.ENV_TOKEN, "").isBlank() ? "" : ", bearer token");
    try (StatewrightClient client = builder.build()) {
      ConformanceRunner runner = new ConformanceRunner(client, runId, System.out);
      out(System.out, "conformance run " + runId + " against " + target.strip() + " (" + security + ")");
      if (!runner.waitUntilReady(Duration.ofSeconds(30))) {
        System.out.println("FAIL setup: server not ready\nconformance: 0 passed, 1 failed");
        System.exit(1);
      }
      failures = runner.run(steps(data));
    }
    System.exit(failures == 0 ? 0 : 1);
  }

  static Map<String, Object> load(Path path) throws IOException {
    try (InputStream in = Files.newInputStream(path)) {
      Object data = new Yaml(new SafeConstructor(new LoaderOptions())).load(in);
      if (!(data instanceof Map<?, ?> map) || !Integer.valueOf(1).equals(map.get("version"))) {
        throw new Mismatch(path + ": expected a version 1 scenario");
      }
      return cast(map);
    }
  }

  static List<Map<String, Object>> steps(Map<String, Object> scenario) {
    List<Map<String, Object>> steps = new ArrayList<>();
    for (Object step : (List<?>) scenario.get("steps")) {
      steps.add(cast(step));
    }
    return steps;
  }

  boolean waitUntilReady(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      try {
        client.diagnostics();
        return true;
      } catch (UnauthenticatedException | PermissionDeniedException e) {
        // The server is up and answered: waiting will not change its mind.
        out(out, "server refused the credentials: " + e.getMessage());
        return false;
      } catch (StatewrightException e) {
        if (System.nanoTime() > deadline) {
          return false;
        }
        try {
          Thread.sleep(200);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return false;
        }
      }
    }
  }

  /** Runs every step; returns the number that failed. */
  public int run(List<Map<String, Object>> steps) {
    for (Map<String, Object> step : steps) {
      String id = String.valueOf(step.get("id"));
      try {
        String detail = runStep(step);
        passed++;
        out(out, "PASS " + id + (detail.isEmpty() ? "" : ": " + detail));
      } catch (Mismatch | StatewrightException | ClassCastException | IllegalArgumentException | NullPointerException e) {
        failed++;
        out(out, "FAIL " + id + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
      }
    }
    out(out, "conformance: " + passed + " passed, " + failed + " failed");
    return failed;
  }

  private static void out(PrintStream out, String line) {
    out.println(line);
    out.flush();
  }

  String runStep(Map<String, Object> step) {
    checkKeys("step", step, "id", "op", "request", "expect", "save", "repeat", "watch", "handlers", "until", "timeout");
    String op = String.valueOf(step.get("op"));
    int repeat = step.containsKey("repeat") ? ((Number) step.get("repeat")).intValue() : 1;
    require(repeat >= 1, "repeat must be at least 1");
    String detail = "";
    for (int i = 0; i < repeat; i++) {
      Map<String, String> vars = Map.of("run", runId, "i", Integer.toString(i));
      Map<String, Object> request = cast(substitute(step.getOrDefault("request", Map.of()), vars));
      Map<String, Object> expect = cast(substitute(step.getOrDefault("expect", Map.of()), vars));
      detail = switch (op) {
        case "StartWorkflow" -> start(step, request, expect);
        case "ResumeWorkflow" -> resume(step, request, expect);
        case "SignalWorkflow" -> signal(step, request, expect);
        case "GetWorkflow" -> unary(step, expect, () -> client.get(str(request, "name", true)), request, "name");
        case "WatchWorkflow" -> watch(step, request, expect);
        case "AwaitWatch" -> awaitWatch(step, expect);
        case "ListWorkflows" -> list(request, expect);
        case "GetDiagnostics" -> diagnostics(request, expect);
        case "RunWorker" -> runWorker(step, vars, expect);
        default -> throw new Mismatch("unknown op " + op);
      };
    }
    return repeat == 1 ? detail : repeat + "x " + detail;
  }

  // --- substitution ---------------------------------------------------------------------

  Object substitute(Object value, Map<String, String> vars) {
    return substitute(value, name -> variable(name, vars));
  }

  /** The step's substitution for handlers: every reference but {@code ${input.KEY}}, kept for the task. */
  Object substituteHandlers(Object value, Map<String, String> vars) {
    return substitute(value, name -> name.startsWith(INPUT_PREFIX) ? null : variable(name, vars));
  }

  /** Replaces {@code ${input.KEY}} in the string values of {@code template} by the task input's KEY. */
  static Object substituteInput(Object template, Map<String, Object> input) {
    return substitute(template, name -> {
      require(name.startsWith(INPUT_PREFIX), "${" + name + "}: a handler can only refer to ${input.KEY}");
      String key = name.substring(INPUT_PREFIX.length());
      require(input.containsKey(key), "${" + name + "}: the task input has no " + key + " (it has " + input.keySet() + ")");
      return String.valueOf(input.get(key));
    });
  }

  /** {@code resolve} gives a reference's value, or null to leave the reference as written. */
  private static Object substitute(Object value, Function<String, String> resolve) {
    if (value instanceof String s) {
      Matcher m = VARIABLE.matcher(s);
      StringBuilder sb = new StringBuilder();
      while (m.find()) {
        String replacement = resolve.apply(m.group(1));
        m.appendReplacement(sb, Matcher.quoteReplacement(replacement == null ? m.group() : replacement));
      }
      m.appendTail(sb);
      return sb.toString();
    }
    if (value instanceof List<?> list) {
      List<Object> copy = new ArrayList<>();
      list.forEach(item -> copy.add(substitute(item, resolve)));
      return copy;
    }
    if (value instanceof Map<?, ?> map) {
      Map<String, Object> copy = new LinkedHashMap<>();
      map.forEach((k, v) -> copy.put(String.valueOf(k), substitute(v, resolve)));
      return copy;
    }
    return value;
  }

  private String variable(String name, Map<String, String> vars) {
    if (vars.containsKey(name)) {
      return vars.get(name);
    }
    int dot = name.indexOf('.');
    String step = dot < 0 ? name : name.substring(0, dot);
    String field = dot < 0 ? "" : name.substring(dot + 1);
    require(saved.containsKey(step), "${" + name + "}: no step saved " + step);
    require(saved.get(step).containsKey(field), "${" + name + "}: no field " + field);
    return String.valueOf(saved.get(step).get(field));
  }

  // --- ops ------------------------------------------------------------------------------

  private interface Call {
    Object run();
  }

  private String start(Map<String, Object> step, Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r, "definition", "workflow_id", "input", "version", "request_id", "if_exists");
    StartWorkflowRequest.Builder request =
        StartWorkflowRequest.newBuilder()
            .setDefinition(str(r, "definition", true))
            .setWorkflowId(str(r, "workflow_id", false))
            .setRequestId(str(r, "request_id", false))
            .setVersion(r.containsKey("version") ? ((Number) r.get("version")).intValue() : 0);
    if (r.containsKey("input")) {
      request.setInput(Structs.toStruct(cast(r.get("input"))));
    }
    if (r.containsKey("if_exists")) {
      // The enum's proto name (IF_EXISTS_POLICY_RESTART), as the scenario spells it.
      request.setIfExists(IfExistsPolicy.valueOf(str(r, "if_exists", true)));
    }
    return unary(step, expect, () -> client.start(request.build()).getWorkflow(), r);
  }

  private String resume(Map<String, Object> step, Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r, "name", "event", "input", "expected_revision", "request_id");
    ResumeWorkflowRequest.Builder request =
        ResumeWorkflowRequest.newBuilder()
            .setName(str(r, "name", true))
            .setEvent(str(r, "event", false))
            .setRequestId(str(r, "request_id", false))
            .setExpectedRevision(r.containsKey("expected_revision") ? ((Number) r.get("expected_revision")).longValue() : 0);
    if (r.containsKey("input")) {
      request.setInput(Structs.toStruct(cast(r.get("input"))));
    }
    return unary(step, expect, () -> client.resume(request.build()).getWorkflow(), r);
  }

  private String signal(Map<String, Object> step, Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r, "name", "event", "payload", "request_id");
    SignalWorkflowRequest.Builder request =
        SignalWorkflowRequest.newBuilder()
            .setName(str(r, "name", true))
            .setEvent(str(r, "event", true))
            .setRequestId(str(r, "request_id", false));
    if (r.containsKey("payload")) {
      request.setPayload(Structs.toStruct(cast(r.get("payload"))));
    }
    return unary(step, expect, () -> client.signal(request.build()), r);
  }

  private String unary(
      Map<String, Object> step, Map<String, Object> expect, Call call, Map<String, Object> request, String... known) {
    if (known.length > 0) {
      checkKeys("request", request, known);
    }
    if (expect.containsKey("error")) {
      checkKeys("expect", expect, "error");
      return expectError(call, cast(expect.get("error")));
    }
    Object result;
    try {
      result = call.run();
    } catch (StatewrightException e) {
      throw new Mismatch("unexpected error " + e.getMessage() + " " + e.metadata());
    }
    Map<String, Object> rest = new LinkedHashMap<>(expect);
    Workflow workflow;
    if (result instanceof SignalWorkflowResponse signal) {
      compare("accepted", signal.getAccepted(), rest.remove("accepted"));
      String reason = signal.getAccepted() ? null : signal.getReason().name().replaceFirst("^SIGNAL_REJECTION_", "");
      compare("reason", reason, rest.remove("reason"));
      workflow = signal.getWorkflow();
    } else {
      workflow = (Workflow) result;
    }
    checkWorkflow(workflow, rest);
    if (step.containsKey("save")) {
      Map<String, Object> fields = new LinkedHashMap<>();
      fields.put("name", workflow.getName());
      fields.put("workflow_id", workflow.getWorkflowId());
      fields.put("revision", workflow.getRevision());
      fields.put("state", workflow.getState());
      fields.put("status", status(workflow));
      saved.put(String.valueOf(step.get("save")), fields);
    }
    return workflow.getName() + " " + status(workflow) + " r" + workflow.getRevision();
  }

  private String expectError(Call call, Map<String, Object> want) {
    checkKeys("error expectation", want, "code", "reason", "domain", "metadata");
    try {
      call.run();
    } catch (StatewrightException e) {
      compare("error code", e.code().name(), want.get("code"));
      compare("error reason", e.reason(), want.get("reason"));
      compare("error domain", e.domain(), want.get("domain"));
      Map<String, Object> metadata = want.containsKey("metadata") ? cast(want.get("metadata")) : Map.of();
      metadata.forEach((k, v) -> compare("error metadata[" + k + "]", e.metadata().get(k), String.valueOf(v)));
      return e.code().name() + "/" + e.reason();
    }
    throw new Mismatch("expected error " + want + ", but the call succeeded");
  }

  private void checkWorkflow(Workflow workflow, Map<String, Object> expect) {
    checkKeys("expect", expect, "status", "state", "revision", "run", "accepted_events", "pending_task", "context");
    compare("status", status(workflow), expect.get("status"));
    compare("state", workflow.getState(), expect.get("state"));
    compare("revision", workflow.getRevision(), number(expect.get("revision")));
    compare("run", (long) workflow.getRun(), number(expect.get("run")));
    if (expect.containsKey("accepted_events")) {
      compare("accepted_events", new ArrayList<>(workflow.getAcceptedEventsList()), expect.get("accepted_events"));
    }
    if (expect.containsKey("pending_task")) {
      Object want = expect.get("pending_task");
      if (want == null) {
        require(!workflow.hasPendingTask(), "pending_task: expected none, got " + describe(workflow.getPendingTask()));
      } else {
        require(workflow.hasPendingTask(), "pending_task: expected " + want + ", the instance has none");
        checkTask("pending_task", workflow.getPendingTask(), cast(want));
      }
    }
    if (expect.containsKey("context")) {
      matchSubset("context", Structs.toMap(workflow.getContext()), expect.get("context"));
    }
  }

  private static void checkTask(String what, Task task, Map<String, Object> want) {
    checkKeys(what + " expectation", want, "state", "queue", "status", "attempt");
    compare(what + " state", task.getState(), want.get("state"));
    compare(what + " queue", task.getQueue(), want.get("queue"));
    compare(what + " status", taskStatus(task), want.get("status"));
    compare(what + " attempt", (long) task.getAttempt(), number(want.get("attempt")));
  }

  /**
   * {@code expected} describes {@code actual}: a map gives only the keys it checks (recursively),
   * a list gives every element in order, numbers compare by value (the context's 1 is YAML's 1 and
   * 1.0), anything else by equality.
   */
  static void matchSubset(String path, Object actual, Object expected) {
    if (expected instanceof Map<?, ?> want) {
      require(actual instanceof Map<?, ?>, path + ": expected a map " + show(expected) + ", got " + show(actual));
      Map<?, ?> have = (Map<?, ?>) actual;
      want.forEach((k, v) -> {
        String key = String.valueOf(k);
        require(have.containsKey(key), path + "." + key + ": missing (there are " + new TreeSet<>(keys(have)) + ")");
        matchSubset(path + "." + key, have.get(key), v);
      });
    } else if (expected instanceof List<?> want) {
      require(actual instanceof List<?>, path + ": expected a list " + show(expected) + ", got " + show(actual));
      List<?> have = (List<?>) actual;
      require(have.size() == want.size(), path + ": expected " + want.size() + " elements " + show(want) + ", got " + show(have));
      for (int i = 0; i < want.size(); i++) {
        matchSubset(path + "[" + i + "]", have.get(i), want.get(i));
      }
    } else if (expected instanceof Number want) {
      require(actual instanceof Number n && n.doubleValue() == want.doubleValue(), path + ": expected " + show(want) + ", got " + show(actual));
    } else {
      require(Objects.equals(expected, actual), path + ": expected " + show(expected) + ", got " + show(actual));
    }
  }

  /** Strings quoted, so that "25.0" and 25.0 read differently in a mismatch. */
  private static String show(Object value) {
    if (value instanceof String s) {
      return '"' + s + '"';
    }
    if (value instanceof List<?> list) {
      List<String> each = new ArrayList<>();
      list.forEach(item -> each.add(show(item)));
      return each.toString();
    }
    if (value instanceof Map<?, ?> map) {
      List<String> each = new ArrayList<>();
      map.forEach((k, v) -> each.add(k + "=" + show(v)));
      return "{" + String.join(", ", each) + "}";
    }
    return String.valueOf(value);
  }

  private static List<String> keys(Map<?, ?> map) {
    List<String> keys = new ArrayList<>();
    map.keySet().forEach(k -> keys.add(String.valueOf(k)));
    return keys;
  }

  private void checkWatchEvent(String what, WatchWorkflowResponse event, Map<String, Object> want) {
    checkKeys(what + " expectation", want, "type", "status", "state", "revision");
    compare(what + " type", event.getType().name().replaceFirst("^WATCH_EVENT_TYPE_", ""), want.get("type"));
    compare(what + " status", status(event.getWorkflow()), want.get("status"));
    compare(what + " state", event.getWorkflow().getState(), want.get("state"));
    compare(what + " revision", event.getRevision(), number(want.get("revision")));
  }

  /** A watch consumed on a background thread while later steps run. */
  static final class BackgroundWatch implements Runnable {
    final List<WatchWorkflowResponse> events = java.util.Collections.synchronizedList(new ArrayList<>());
    final CountDownLatch first = new CountDownLatch(1);
    final CountDownLatch done = new CountDownLatch(1);
    private final Iterator<WatchWorkflowResponse> stream;
    volatile RuntimeException error;

    BackgroundWatch(Iterator<WatchWorkflowResponse> stream) {
      this.stream = stream;
    }

    @Override
    public void run() {
      try {
        while (stream.hasNext()) {
          events.add(stream.next());
          first.countDown();
        }
      } catch (RuntimeException e) {
        error = e;
      } finally {
        first.countDown();
        done.countDown();
      }
    }
  }

  private String watch(Map<String, Object> step, Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r, "name", "after_revision");
    checkKeys("expect", expect, "first");
    Long after = r.containsKey("after_revision") ? ((Number) r.get("after_revision")).longValue() : null;
    WatchOptions options = after == null ? WatchOptions.defaults() : WatchOptions.defaults().withAfterRevision(after);
    BackgroundWatch watch = new BackgroundWatch(client.watch(str(r, "name", true), options));
    Thread thread = new Thread(watch, "watch-" + step.get("id"));
    thread.setDaemon(true);
    thread.start();
    watches.put(String.valueOf(step.get("id")), watch);
    // Later steps change the instance: they may only run once the first message is in,
    // or the CURRENT message could already show their effect.
    require(await(watch.first, WATCH_FIRST), "no watch message within " + WATCH_FIRST.toSeconds() + "s");
    if (watch.events.isEmpty()) {
      throw new Mismatch("watch ended before its first message: " + watch.error);
    }
    WatchWorkflowResponse first = watch.events.get(0);
    if (expect.containsKey("first")) {
      checkWatchEvent("first", first, cast(expect.get("first")));
    }
    return first.getType() + " r" + first.getRevision() + " " + status(first.getWorkflow());
  }

  private String awaitWatch(Map<String, Object> step, Map<String, Object> expect) {
    String name = String.valueOf(step.get("watch"));
    BackgroundWatch watch = watches.get(name);
    require(watch != null, "no watch was opened by a step " + name);
    checkKeys("expect", expect, "last", "ends");
    require(await(watch.done, WATCH_END), "watch " + name + " did not end within " + WATCH_END.toSeconds() + "s");
    String ends = watch.error == null ? "OK"
        : watch.error instanceof StatewrightException se ? se.code().name() : watch.error.getClass().getSimpleName();
    compare("watch end", ends, expect.get("ends"));
    List<Long> revisions = new ArrayList<>();
    watch.events.forEach(e -> revisions.add(e.getRevision()));
    for (int i = 1; i < revisions.size(); i++) {
      require(revisions.get(i) == revisions.get(i - 1) + 1, "watch revisions not consecutive: " + revisions);
    }
    if (expect.containsKey("last")) {
      require(!watch.events.isEmpty(), "watch delivered nothing");
      checkWatchEvent("last", watch.events.get(watch.events.size() - 1), cast(expect.get("last")));
    }
    return "revisions " + revisions + ", ended " + ends;
  }

  private String list(Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r, "definition", "page_size");
    checkKeys("expect", expect, "min_pages", "page_size_at_most", "no_duplicates", "contains");
    ListWorkflowsRequest request =
        ListWorkflowsRequest.newBuilder()
            .setDefinition(str(r, "definition", false))
            .setPageSize(r.containsKey("page_size") ? ((Number) r.get("page_size")).intValue() : 0)
            .build();
    List<ListWorkflowsResponse> pages = new ArrayList<>();
    client.listPages(request).forEach(pages::add);
    List<String> ids = new ArrayList<>();
    int largest = 0;
    for (ListWorkflowsResponse page : pages) {
      largest = Math.max(largest, page.getWorkflowsCount());
      page.getWorkflowsList().forEach(w -> ids.add(w.getWorkflowId()));
    }
    if (expect.containsKey("min_pages")) {
      int min = ((Number) expect.get("min_pages")).intValue();
      require(pages.size() >= min, "expected at least " + min + " pages, got " + pages.size());
    }
    if (expect.containsKey("page_size_at_most")) {
      int most = ((Number) expect.get("page_size_at_most")).intValue();
      require(largest <= most, "a page held " + largest + " workflows, more than " + most);
    }
    if (Boolean.TRUE.equals(expect.get("no_duplicates"))) {
      Set<String> seen = new HashSet<>();
      Set<String> duplicates = new TreeSet<>();
      ids.forEach(id -> {
        if (!seen.add(id)) {
          duplicates.add(id);
        }
      });
      require(duplicates.isEmpty(), "duplicated across pages: " + duplicates);
    }
    if (expect.containsKey("contains")) {
      List<Object> missing = new ArrayList<>((List<?>) expect.get("contains"));
      missing.removeAll(ids);
      require(missing.isEmpty(), "missing from the listing: " + missing);
    }
    return pages.size() + " pages, " + ids.size() + " workflows";
  }

  private String diagnostics(Map<String, Object> r, Map<String, Object> expect) {
    checkKeys("request", r);
    checkKeys("expect", expect, "build_version_set", "definitions_contain");
    GetDiagnosticsResponse diagnostics = client.diagnostics();
    if (Boolean.TRUE.equals(expect.get("build_version_set"))) {
      require(!diagnostics.getBuild().getVersion().isEmpty(), "build.version is empty");
    }
    if (expect.containsKey("definitions_contain")) {
      List<Object> missing = new ArrayList<>((List<?>) expect.get("definitions_contain"));
      missing.removeAll(diagnostics.getDefinitionsList());
      require(missing.isEmpty(), "definitions missing: " + missing);
    }
    return "build " + diagnostics.getBuild().getVersion() + ", " + diagnostics.getDefinitionsCount() + " definitions";
  }

  /**
   * Runs the client's own {@link Worker}, with a handler per queue from the step, until the
   * instance {@code until.name} ends or {@code timeout} passes; shuts it down gracefully, then
   * checks the final instance and its tasks.
   */
  private String runWorker(Map<String, Object> step, Map<String, String> vars, Map<String, Object> expect) {
    require(step.get("handlers") instanceof Map<?, ?> given && !given.isEmpty(), "RunWorker needs handlers: {queue: {result|fail}}");
    Map<String, Object> handlers = cast(substituteHandlers(step.get("handlers"), vars));
    require(step.get("until") instanceof Map<?, ?>, "RunWorker needs until: {name}");
    Map<String, Object> until = cast(substitute(step.get("until"), vars));
    checkKeys("until", until, "name");
    String name = str(until, "name", true);
    Duration timeout = step.containsKey("timeout") ? duration(step.get("timeout")) : WORKER_TIMEOUT;
    checkKeys("expect", expect, "status", "state", "revision", "run", "accepted_events", "pending_task", "context", "tasks");

    List<String> handlerErrors = new CopyOnWriteArrayList<>();
    Map<String, AtomicInteger> handled = new ConcurrentHashMap<>();
    Worker.Builder builder = Worker.builder(client).identity("conformance-" + runId);
    handlers.forEach((queue, spec) -> {
      require(spec instanceof Map<?, ?>, "handler " + queue + ": expected {result: ...} or {fail: ...}, got " + spec);
      TaskHandler handler = handler(queue, cast(spec), handlerErrors);
      builder.register(queue, task -> {
        handled.computeIfAbsent(queue, q -> new AtomicInteger()).incrementAndGet();
        return handler.handle(task);
      });
    });
    Worker worker = builder.build();
    Workflow last;
    worker.start();
    try {
      last = awaitTerminal(name, timeout, handlerErrors);
    } finally {
      worker.close();
    }
    require(handlerErrors.isEmpty(), "a handler failed: " + handlerErrors);

    Map<String, Object> rest = new LinkedHashMap<>(expect);
    Object wantTasks = rest.remove("tasks");
    checkWorkflow(last, rest);
    List<Task> tasks = client.listTasks(ListTasksRequest.newBuilder().setWorkflow(name).build());
    if (wantTasks != null) {
      require(wantTasks instanceof List<?>, "expect.tasks: expected a list, got " + wantTasks);
      List<?> want = (List<?>) wantTasks;
      require(tasks.size() == want.size(), "expected " + want.size() + " tasks, got " + tasks.size() + ": " + describe(tasks));
      for (int i = 0; i < want.size(); i++) {
        require(want.get(i) instanceof Map<?, ?>, "expect.tasks[" + i + "]: expected a map, got " + want.get(i));
        checkTask("tasks[" + i + "]", tasks.get(i), cast(want.get(i)));
      }
    }
    return name + " " + status(last) + " r" + last.getRevision() + " in " + last.getState() + ", " + tasks.size()
        + " tasks, handled " + new TreeMap<>(handled);
  }

  /**
   * The handler a step gives a queue: {@code {result: {...}}} completes with the map, its strings'
   * {@code ${input.KEY}} replaced from the task input; {@code {fail: {type, message,
   * non_retryable}}} throws the client's {@link TaskFailure}. A handler that cannot do what the
   * step says records why in {@code errors} and gives the task up, so the step fails with the cause.
   */
  static TaskHandler handler(String queue, Map<String, Object> spec, List<String> errors) {
    checkKeys("handler " + queue, spec, "result", "fail");
    require(spec.size() == 1, "handler " + queue + ": give exactly one of result and fail, got " + spec.keySet());
    if (spec.containsKey("result")) {
      require(spec.get("result") instanceof Map<?, ?>, "handler " + queue + ": result must be a map, got " + spec.get("result"));
      Map<String, Object> template = cast(spec.get("result"));
      return task -> {
        try {
          return cast(substituteInput(template, task.input()));
        } catch (Mismatch e) {
          errors.add(queue + ": " + e.getMessage());
          throw TaskFailure.nonRetryable("CONFORMANCE_HANDLER", e.getMessage());
        }
      };
    }
    require(spec.get("fail") instanceof Map<?, ?>, "handler " + queue + ": fail must be a map, got " + spec.get("fail"));
    Map<String, Object> fail = cast(spec.get("fail"));
    checkKeys("handler " + queue + " fail", fail, "type", "message", "non_retryable");
    String type = str(fail, "type", true);
    String message = str(fail, "message", false);
    Object nonRetryable = fail.getOrDefault("non_retryable", false);
    require(nonRetryable instanceof Boolean, "handler " + queue + ": non_retryable must be true or false, got " + nonRetryable);
    require(!type.isBlank(), "handler " + queue + ": fail needs a type");
    return task -> {
      throw TaskFailure.builder(type).message(message).nonRetryable((Boolean) nonRetryable).build();
    };
  }

  /** GetWorkflow every {@link #WORKER_CHECK_EVERY} until a terminal status, a handler error or the timeout. */
  private Workflow awaitTerminal(String name, Duration timeout, List<String> handlerErrors) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      Workflow workflow = client.get(name);
      if (TERMINAL.contains(status(workflow)) || !handlerErrors.isEmpty()) {
        return workflow;
      }
      if (System.nanoTime() - deadline >= 0) {
        throw new Mismatch(name + " still " + status(workflow) + " in " + workflow.getState() + " at r" + workflow.getRevision()
            + " after " + timeout.toMillis() + " ms; pending task "
            + (workflow.hasPendingTask() ? describe(workflow.getPendingTask()) : "none"));
      }
      try {
        Thread.sleep(WORKER_CHECK_EVERY.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new Mismatch("interrupted while waiting for " + name);
      }
    }
  }

  /** A scenario duration: {@code 60s}, {@code 500ms}, {@code 2m}, {@code 1h}, or a number of seconds. */
  static Duration duration(Object value) {
    Duration d;
    if (value instanceof Number n) {
      d = Duration.ofNanos(Math.round(n.doubleValue() * 1e9));
    } else {
      Matcher m = DURATION.matcher(String.valueOf(value).trim());
      require(m.matches(), "not a duration: " + value + " (write 60s, 500ms, 2m or 1h)");
      double amount = Double.parseDouble(m.group(1));
      long unitNanos = switch (m.group(2)) {
        case "ms" -> 1_000_000L;
        case "s" -> 1_000_000_000L;
        case "m" -> 60_000_000_000L;
        default -> 3_600_000_000_000L;
      };
      d = Duration.ofNanos(Math.round(amount * unitNanos));
    }
    require(!d.isNegative() && !d.isZero(), "a duration must be positive: " + value);
    return d;
  }

  private static String describe(Task task) {
    return task.getQueue() + "/" + task.getState() + " " + taskStatus(task) + " attempt " + task.getAttempt();
  }

  private static String describe(List<Task> tasks) {
    List<String> each = new ArrayList<>();
    tasks.forEach(t -> each.add(describe(t)));
    return each.toString();
  }

  // --- helpers --------------------------------------------------------------------------

  static void checkKeys(String kind, Map<String, Object> given, String... known) {
    Set<String> unknown = new TreeSet<>(given.keySet());
    unknown.removeAll(List.of(known));
    require(unknown.isEmpty(), "unknown " + kind + " key(s) " + unknown + "; this runner knows " + List.of(known));
  }

  static void compare(String what, Object actual, Object expected) {
    if (expected == null) {
      return;
    }
    require(expected.equals(actual), what + ": expected " + expected + ", got " + actual);
  }

  private static Long number(Object value) {
    return value == null ? null : ((Number) value).longValue();
  }

  static void require(boolean condition, String message) {
    if (!condition) {
      throw new Mismatch(message);
    }
  }

  private static String status(Workflow workflow) {
    return workflow.getStatus().name().replaceFirst("^WORKFLOW_STATUS_", "");
  }

  private static String taskStatus(Task task) {
    return task.getStatus().name().replaceFirst("^TASK_STATUS_", "");
  }

  private static String str(Map<String, Object> map, String key, boolean required) {
    Object value = map.get(key);
    if (value == null) {
      require(!required, "request needs " + key);
      return "";
    }
    return String.valueOf(value);
  }

  private static boolean await(CountDownLatch latch, Duration timeout) {
    try {
      return latch.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    }
  }

  @SuppressWarnings("unchecked")
  static Map<String, Object> cast(Object value) {
    return (Map<String, Object>) value;
  }
}
