package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Struct;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class StructsAndErrorsTest {
  @Test
  void roundTripsNestedValuesAndRestoresIntegers() {
    Map<String, Object> input = new LinkedHashMap<>();
    input.put("topic", "x");
    input.put("attempts", 3);
    input.put("price", 12.5);
    input.put("ok", true);
    input.put("none", null);
    input.put("items", List.of("book", 2));
    input.put("meta", Map.of("nested", Map.of("n", 1)));
    Struct struct = Structs.toStruct(input);
    assertEquals(3.0, struct.getFieldsOrThrow("attempts").getNumberValue());
    Map<String, Object> back = Structs.toMap(struct);
    assertEquals(3L, back.get("attempts"));
    assertEquals(12.5, back.get("price"));
    assertEquals(true, back.get("ok"));
    assertTrue(back.containsKey("none"));
    assertEquals(null, back.get("none"));
    assertEquals(Arrays.asList("book", 2L), back.get("items"));
    assertEquals(Map.of("nested", Map.of("n", 1L)), back.get("meta"));
  }

  @Test
  void refusesValuesAStructCannotHold() {
    assertThrows(IllegalArgumentException.class, () -> Structs.toValue(Double.NaN));
    assertThrows(IllegalArgumentException.class, () -> Structs.toValue(new Object()));
  }

  @Test
  void readsErrorInfoFromAFailedCall() {
    StatusRuntimeException e =
        FakeService.error(Status.Code.NOT_FOUND, "WORKFLOW_NOT_FOUND", Map.of("workflow_id", "w"));
    assertEquals("WORKFLOW_NOT_FOUND", ErrorInfos.fromThrowable(e).orElseThrow().getReason());
    StatewrightException wrapped = StatewrightException.from(e);
    assertEquals(Status.Code.NOT_FOUND, wrapped.code());
    assertEquals(Map.of("workflow_id", "w"), wrapped.metadata());
    assertTrue(wrapped.isReason("WORKFLOW_NOT_FOUND"));
    assertTrue(wrapped.actualRevision().isEmpty());
  }

  @Test
  void aStatusWithoutDetailsHasNoReason() {
    StatusRuntimeException e = Status.UNAVAILABLE.withDescription("connection refused").asRuntimeException();
    assertTrue(ErrorInfos.fromThrowable(e).isEmpty());
    StatewrightException wrapped = StatewrightException.from(e);
    assertEquals("", wrapped.reason());
    assertEquals(Status.Code.UNAVAILABLE, wrapped.code());
  }

  @Test
  void refusedCredentialsAndPermissionsHaveTypesOfTheirOwn() {
    StatewrightException unauthenticated =
        StatewrightException.from(FakeService.error(Status.Code.UNAUTHENTICATED, "UNAUTHENTICATED", Map.of()));
    assertInstanceOf(UnauthenticatedException.class, unauthenticated);
    assertEquals(Status.Code.UNAUTHENTICATED, unauthenticated.code());
    assertEquals("UNAUTHENTICATED", unauthenticated.reason());
    assertEquals(ErrorInfos.DOMAIN, unauthenticated.domain());
    StatewrightException denied =
        StatewrightException.from(FakeService.error(Status.Code.PERMISSION_DENIED, "PERMISSION_DENIED", Map.of()));
    assertInstanceOf(PermissionDeniedException.class, denied);
    assertEquals("PERMISSION_DENIED", denied.reason());
    StatewrightException other = StatewrightException.from(FakeService.error(Status.Code.NOT_FOUND, "WORKFLOW_NOT_FOUND", Map.of()));
    assertEquals(StatewrightException.class, other.getClass());
  }

  @Test
  void aRateLimitCarriesItsRetryDelay() {
    StatusRuntimeException limited = FakeService.rateLimited(Duration.ofMillis(250));
    assertEquals(Duration.ofMillis(250), ErrorInfos.retryDelay(limited).orElseThrow());
    assertEquals("RATE_LIMITED", ErrorInfos.fromThrowable(limited).orElseThrow().getReason());
    StatewrightException e = StatewrightException.from(limited);
    assertTrue(e.isRateLimited());
    assertEquals(Duration.ofMillis(250), e.retryDelay().orElseThrow());
    StatewrightException plain = StatewrightException.from(FakeService.error(Status.Code.RESOURCE_EXHAUSTED, "TOO_MANY_WATCHES", Map.of()));
    assertFalse(plain.isRateLimited());
    assertTrue(plain.retryDelay().isEmpty());
    assertTrue(ErrorInfos.retryDelay(Status.UNAVAILABLE.asRuntimeException()).isEmpty());
  }

  @Test
  void aFailureOnThisSideSaysWhyFromItsCause() {
    StatusRuntimeException e = Status.UNAVAILABLE.withDescription("io exception")
        .withCause(new java.io.IOException("wrapper", new java.security.cert.CertificateException("unable to find valid certification path")))
        .asRuntimeException();
    assertEquals("UNAVAILABLE: io exception (unable to find valid certification path)", StatewrightException.from(e).getMessage());
  }
}
