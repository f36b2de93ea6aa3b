package dev.statewright.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Struct;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
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
}
