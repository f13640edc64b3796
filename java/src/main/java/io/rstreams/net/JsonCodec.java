package io.rstreams.net;

import io.rstreams.wire.ContentTypes;
import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import tools.jackson.core.JacksonException;
import tools.jackson.core.JsonGenerator;
import tools.jackson.core.JsonParser;
import tools.jackson.core.JsonToken;
import tools.jackson.core.ObjectReadContext;
import tools.jackson.core.ObjectWriteContext;
import tools.jackson.core.SerializableString;
import tools.jackson.core.StreamReadConstraints;
import tools.jackson.core.io.CharacterEscapes;
import tools.jackson.core.json.JsonFactory;
import tools.jackson.core.json.JsonWriteFeature;

/**
 * {@link Codec#JSON}: one JSON text (RFC 8259) per element, {@code application/json}
 * (PROTOCOL.md §17.3), on Jackson's streaming core, whose parser bounds what a peer can make it
 * build (nesting, number and string lengths). Written as rstreams' {@code JSON} writes it:
 * compact, DEL and non-ASCII characters escaped as {@code \\uXXXX} (lower-case hex, a pair for a
 * character beyond U+FFFF), so a value of only strings, integers, booleans, null, lists and maps
 * has the same bytes from either side.
 *
 * <p>Values are Java's plain ones both ways. Decoding gives {@code LinkedHashMap<String, Object>}
 * for an object (its order kept), {@code ArrayList<Object>} for an array, {@code String},
 * {@code Long} for an integer (a {@code BigInteger} past its range), {@code Double} for a number
 * with a fraction or exponent, {@code Boolean}, and {@code null} inside a container. Encoding
 * takes those and any {@code Map} with {@code String} keys, {@code Iterable}, {@code Object[]},
 * {@code CharSequence}, {@code Integer}, {@code Short}, {@code Byte}, {@code Float},
 * {@code BigDecimal}. Anything else, a NaN or an infinity (not JSON), and a top-level JSON
 * {@code null} (a Flow element is never null, Reactive Streams rule 2.13) are refused with
 * {@code IllegalArgumentException}: the stream fails as for any element a codec refuses.
 */
final class JsonCodec implements Codec<Object> {
    /** Deepest nesting written, as deep as the parser reads (a cycle is refused, not a stack overflow). */
    private static final int MAX_DEPTH = StreamReadConstraints.DEFAULT_MAX_DEPTH; // 500

    private final JsonFactory factory = JsonFactory.builder()
            .highestNonEscapedChar(0x7E) // what Python's ensure_ascii escapes: everything past ASCII,
            .characterEscapes(new DelEscaped()) // and DEL
            .disable(JsonWriteFeature.WRITE_HEX_UPPER_CASE)
            .build();

    /** JSON's own escapes for ASCII, and DEL (0x7F) as {@code \\u007f}, as Python's ensure_ascii writes it. */
    private static final class DelEscaped extends CharacterEscapes {
        private static final long serialVersionUID = 1L;
        private final int[] ascii = standardAsciiEscapesForJSON();

        DelEscaped() {
            ascii[0x7F] = ESCAPE_STANDARD;
        }

        @Override
        public int[] getEscapeCodesForAscii() {
            return ascii;
        }

        @Override
        public SerializableString getEscapeSequence(int ch) {
            return null; // no custom escapes: the standard \\uXXXX for the rest
        }
    }

    @Override
    public String mediaType() {
        return ContentTypes.JSON;
    }

    @Override
    public byte[] encode(Object element) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (JsonGenerator g = factory.createGenerator(ObjectWriteContext.empty(), out)) {
            write(g, element, 0);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("cannot write the element as JSON: " + e.getOriginalMessage(), e);
        }
        return out.toByteArray();
    }

    private static void write(JsonGenerator g, Object value, int depth) {
        if (value == null) {
            g.writeNull();
        } else if (value instanceof CharSequence s) {
            g.writeString(s.toString());
        } else if (value instanceof Boolean b) {
            g.writeBoolean(b);
        } else if (value instanceof Long || value instanceof Integer || value instanceof Short || value instanceof Byte) {
            g.writeNumber(((Number) value).longValue());
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (!Double.isFinite(d)) {
                throw new IllegalArgumentException("JSON has no " + d + " (RFC 8259 §6, PROTOCOL.md §17.3)");
            }
            g.writeNumber(d);
        } else if (value instanceof BigInteger big) {
            g.writeNumber(big);
        } else if (value instanceof BigDecimal big) {
            g.writeNumber(big);
        } else if (value instanceof Map<?, ?> map) {
            nest(depth);
            g.writeStartObject();
            for (Map.Entry<?, ?> e : map.entrySet()) {
                if (!(e.getKey() instanceof String key)) {
                    throw new IllegalArgumentException("a JSON object's keys are strings, got "
                            + (e.getKey() == null ? "null" : e.getKey().getClass().getName()));
                }
                g.writeName(key);
                write(g, e.getValue(), depth + 1);
            }
            g.writeEndObject();
        } else if (value instanceof Iterable<?> items) {
            nest(depth);
            g.writeStartArray();
            for (Object item : items) {
                write(g, item, depth + 1);
            }
            g.writeEndArray();
        } else if (value instanceof Object[] items) {
            nest(depth);
            g.writeStartArray();
            for (Object item : items) {
                write(g, item, depth + 1);
            }
            g.writeEndArray();
        } else {
            throw new IllegalArgumentException("not a JSON value: a " + value.getClass().getName()
                    + " (Codec.JSON writes maps, lists, strings, numbers, booleans and null)");
        }
    }

    /** A container at {@code depth} (0: the element itself) nests depth + 1 deep: at most as deep as the parser reads. */
    private static void nest(int depth) {
        if (depth >= MAX_DEPTH) {
            throw new IllegalArgumentException("a JSON element nests deeper than " + MAX_DEPTH + " (a cycle?)");
        }
    }

    @Override
    public Object decode(byte[] data) {
        try (JsonParser p = factory.createParser(ObjectReadContext.empty(), data)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw new IllegalArgumentException("an application/json element is one JSON text, got none (PROTOCOL.md §17.3)");
            }
            Object value = read(p, first);
            if (p.nextToken() != null) {
                throw new IllegalArgumentException("an application/json element is one JSON text, got more after it (PROTOCOL.md §17.3)");
            }
            if (value == null) {
                throw new IllegalArgumentException("the JSON element is null, which a Flow element cannot be (Reactive Streams rule 2.13)");
            }
            return value;
        } catch (JacksonException e) {
            throw new IllegalArgumentException("not an application/json element (PROTOCOL.md §17.3): " + e.getOriginalMessage(), e);
        }
    }

    /** The value that starts with {@code token} (the parser bounds the nesting, StreamReadConstraints). */
    private static Object read(JsonParser p, JsonToken token) {
        if (token == null) {
            throw new IllegalArgumentException("an application/json element ends inside its JSON text (PROTOCOL.md §17.3)");
        }
        switch (token) {
            case START_OBJECT -> {
                Map<String, Object> map = new LinkedHashMap<>();
                for (String name = p.nextName(); name != null; name = p.nextName()) {
                    map.put(name, read(p, p.nextToken()));
                }
                return map;
            }
            case START_ARRAY -> {
                List<Object> list = new ArrayList<>();
                for (JsonToken t = p.nextToken(); t != JsonToken.END_ARRAY; t = p.nextToken()) { // null: read() refuses
                    list.add(read(p, t));
                }
                return list;
            }
            case VALUE_STRING -> {
                return p.getString();
            }
            case VALUE_NUMBER_INT -> {
                return p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.getBigIntegerValue() : (Object) p.getLongValue();
            }
            case VALUE_NUMBER_FLOAT -> {
                return p.getDoubleValue();
            }
            case VALUE_TRUE -> {
                return Boolean.TRUE;
            }
            case VALUE_FALSE -> {
                return Boolean.FALSE;
            }
            case VALUE_NULL -> {
                return null;
            }
            default -> throw new IllegalStateException("unexpected JSON token " + token);
        }
    }
}
