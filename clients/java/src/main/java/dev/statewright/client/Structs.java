package dev.statewright.client;

import com.google.protobuf.ListValue;
import com.google.protobuf.NullValue;
import com.google.protobuf.Struct;
import com.google.protobuf.Value;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Converts between plain Java values and {@code google.protobuf.Struct}.
 *
 * <p>A Struct stores every number as a double; {@link #toMap} turns integral doubles back into
 * {@code Long} (context fields declared {@code int} are integers on the server) and keeps real
 * fractions as {@code Double}.
 */
public final class Structs {
  private static final double MAX_EXACT = 9007199254740992.0; // 2^53

  private Structs() {}

  public static Struct toStruct(Map<String, ?> values) {
    Struct.Builder struct = Struct.newBuilder();
    if (values != null) {
      values.forEach((key, value) -> struct.putFields(key, toValue(value)));
    }
    return struct.build();
  }

  public static Value toValue(Object value) {
    if (value == null) {
      return Value.newBuilder().setNullValue(NullValue.NULL_VALUE).build();
    }
    if (value instanceof Boolean b) {
      return Value.newBuilder().setBoolValue(b).build();
    }
    if (value instanceof Number n) {
      double d = n.doubleValue();
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        throw new IllegalArgumentException("a Struct cannot hold the number " + value);
      }
      return Value.newBuilder().setNumberValue(d).build();
    }
    if (value instanceof CharSequence s) {
      return Value.newBuilder().setStringValue(s.toString()).build();
    }
    if (value instanceof Map<?, ?> m) {
      Struct.Builder struct = Struct.newBuilder();
      m.forEach((k, v) -> {
        if (!(k instanceof String key)) {
          throw new IllegalArgumentException("Struct keys must be strings, not " + k);
        }
        struct.putFields(key, toValue(v));
      });
      return Value.newBuilder().setStructValue(struct).build();
    }
    if (value instanceof Iterable<?> items) {
      ListValue.Builder list = ListValue.newBuilder();
      items.forEach(item -> list.addValues(toValue(item)));
      return Value.newBuilder().setListValue(list).build();
    }
    throw new IllegalArgumentException("cannot convert " + value.getClass().getName() + " to a protobuf Value");
  }

  public static Map<String, Object> toMap(Struct struct) {
    Map<String, Object> map = new LinkedHashMap<>();
    struct.getFieldsMap().forEach((key, value) -> map.put(key, fromValue(value)));
    return map;
  }

  public static Object fromValue(Value value) {
    switch (value.getKindCase()) {
      case BOOL_VALUE:
        return value.getBoolValue();
      case NUMBER_VALUE:
        double d = value.getNumberValue();
        if (d == Math.rint(d) && Math.abs(d) <= MAX_EXACT) {
          return (long) d;
        }
        return d;
      case STRING_VALUE:
        return value.getStringValue();
      case STRUCT_VALUE:
        return toMap(value.getStructValue());
      case LIST_VALUE:
        List<Object> list = new ArrayList<>();
        value.getListValue().getValuesList().forEach(v -> list.add(fromValue(v)));
        return list;
      default:
        return null;
    }
  }
}
