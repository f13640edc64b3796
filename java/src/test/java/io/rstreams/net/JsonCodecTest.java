package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertThrows;
import static org.testng.Assert.assertTrue;

import io.rstreams.wire.ContentTypes;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.testng.annotations.Test;

/** {@link Codec#JSON} (PROTOCOL.md §17.3): the bytes rstreams writes, the values read back, what is refused. */
public class JsonCodecTest {
    private static String text(Object value) {
        return new String(Codec.JSON.encode(value), StandardCharsets.UTF_8);
    }

    private static Object read(String json) {
        return Codec.JSON.decode(json.getBytes(StandardCharsets.UTF_8));
    }

    /** {"a": [1, "é", null, true], "b": {"c": 1.5}}, its keys in this order. */
    private static Map<String, Object> sample() {
        Map<String, Object> map = new LinkedHashMap<>();
        map.put("a", Arrays.asList(1L, "é", null, true));
        map.put("b", Map.of("c", 1.5));
        return map;
    }

    @Test(timeOut = 10_000)
    public void writesCompactWithNonAsciiEscapedAsPythonDoes() {
        assertEquals(Codec.JSON.mediaType(), ContentTypes.JSON);
        // §17.3's example, byte for byte; then what json.dumps(v, separators=(",", ":")) writes
        assertEquals(text(Map.of("a", List.of(1, "é"))), "{\"a\":[1,\"\\u00e9\"]}");
        assertEquals(text(sample()), "{\"a\":[1,\"\\u00e9\",null,true],\"b\":{\"c\":1.5}}");
        assertEquals(text("\uD83D\uDE00 </\"\\\n\u007f\u0001\b\f\t\r"), "\"\\ud83d\\ude00 </\\\"\\\\\\n\\u007f\\u0001\\b\\f\\t\\r\"");
        assertEquals(text(new BigInteger("1000000000000000000000000000000")), "1000000000000000000000000000000");
        assertEquals(text(new Object[] {(short) 1, (byte) 2, 3, 4L, 0.5f, new BigDecimal("0.25"), false}), "[1,2,3,4,0.5,0.25,false]");
        assertEquals(text(List.of()), "[]");
        assertEquals(text(Map.of()), "{}");
    }

    @Test(timeOut = 10_000)
    public void readsPlainJavaValues() {
        assertEquals(read("{\"a\":[1,\"\\u00e9\",null,true],\"b\":{\"c\":1.5}}"), sample());
        assertTrue(read("{\"z\":1,\"a\":2}") instanceof LinkedHashMap<?, ?> m && m.keySet().iterator().next().equals("z"), "order kept");
        assertEquals(read(" [ 7 , -7 , 1e2 ] "), List.of(7L, -7L, 100.0));
        assertEquals(read("12345678901234567890123"), new BigInteger("12345678901234567890123"));
        assertEquals(read("\"h\u00e9 \\ud83d\\ude00\""), "hé \uD83D\uDE00");
        assertEquals(read("false"), false);
        Object value = read("[[],{}]");
        assertEquals(value, List.of(List.of(), Map.of()));
        assertTrue(value instanceof ArrayList<?>);
    }

    @Test(timeOut = 10_000)
    public void refusesWhatIsNotOneJsonTextAndWhatHasNoJsonForm() {
        for (String bad : List.of("", " ", "null", "[1", "{\"a\":", "1 2", "{\"a\":NaN}", "[1,]", "'x'", "\"\\x\"", "[".repeat(100_000))) {
            IllegalArgumentException e = expectThrows(() -> read(bad));
            assertTrue(e.getMessage().contains("§17.3") || e.getMessage().contains("rule 2.13"), bad + ": " + e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> Codec.JSON.decode(new byte[] {'"', (byte) 0xff, '"'}));
        assertThrows(IllegalArgumentException.class, () -> text(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> text(List.of(Double.POSITIVE_INFINITY)));
        assertThrows(IllegalArgumentException.class, () -> text(new Object()));
        assertThrows(IllegalArgumentException.class, () -> text(Map.of(1, 2)));
        Object deepest = List.of(1L);
        for (int k = 1; k < 500; k++) {
            deepest = List.of(deepest);
        }
        assertEquals(read(text(deepest)), deepest, "500 deep, as deep as the parser reads");
        assertThrows(IllegalArgumentException.class, () -> read("[".repeat(501) + "]".repeat(501)));
        List<Object> cycle = new ArrayList<>();
        cycle.add(cycle);
        assertTrue(expectThrows(() -> text(cycle)).getMessage().contains("deeper than 500"));
    }

    private static IllegalArgumentException expectThrows(Runnable r) {
        try {
            r.run();
        } catch (IllegalArgumentException e) {
            return e;
        }
        throw new AssertionError("nothing refused");
    }
}
