package io.rstreams.wire;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/** Every vector of docs/protocol-vectors.json, encoded and parsed byte for byte (PROTOCOL.md §13). */
public class ProtocolVectorsTest {

    @DataProvider(name = "vectors")
    public Object[][] vectors() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        @SuppressWarnings("unchecked")
        Map<String, Object> doc = (Map<String, Object>) Json.parse(text);
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> vectors = (List<Map<String, Object>>) doc.get("vectors");
        assertTrue(vectors.size() >= 30, "expected the whole vector list, got " + vectors.size());
        Object[][] out = new Object[vectors.size()][];
        for (int k = 0; k < out.length; k++) {
            out[k] = new Object[] {vectors.get(k).get("type") + " " + vectors.get(k).get("note"), vectors.get(k)};
        }
        return out;
    }

    @Test(dataProvider = "vectors", timeOut = 10_000)
    public void encodesExactly(String name, Map<String, Object> vector) {
        long size = num(vector.get("element_size"));
        assertEquals(Hex.encode(FrameWriter.encode(frameOf(vector), size)), vector.get("hex"), name);
    }

    @Test(dataProvider = "vectors", timeOut = 10_000)
    public void parsesWholeByteByByteAndWithTrailingBytes(String name, Map<String, Object> vector) throws Exception {
        Frame expected = frameOf(vector);
        byte[] bytes = Hex.decode((String) vector.get("hex"));
        long size = num(vector.get("element_size"));
        byte[] prefix = size == 0 ? new byte[0] : FrameWriter.encode(new Frame.OnSubscribe(1, size), 0);

        FrameParser whole = new FrameParser(Limits.DEFAULT);
        whole.feed(prefix, 0, prefix.length);
        whole.feed(bytes, 0, bytes.length);
        assertEquals(last(whole.parseAll()), expected, name);
        assertNull(whole.eof());

        FrameParser drip = new FrameParser(Limits.DEFAULT);
        drip.feed(prefix, 0, prefix.length);
        List<Frame> got = new ArrayList<>(drip.parseAll());
        for (int k = 0; k < bytes.length; k++) {
            drip.feed(bytes, k, 1);
            Frame f = drip.next();
            if (k < bytes.length - 1) {
                assertNull(f, name + ": a frame before its last byte");
            } else {
                got.add(f);
            }
        }
        assertEquals(last(got), expected, name);

        FrameParser trailing = new FrameParser(Limits.DEFAULT);
        byte[] more = new byte[] {FrameType.REQUEST, 0x07};
        trailing.feed(prefix, 0, prefix.length);
        trailing.feed(bytes, 0, bytes.length);
        trailing.feed(more, 0, more.length);
        assertEquals(last(trailing.parseAll()), expected, name);
        assertEquals(trailing.buffered(), 2, name + ": the incomplete request stays buffered");
        assertTrue(trailing.eof() != null, name + ": input ending inside the request is a framing error");
    }

    private static Frame last(List<Frame> frames) {
        return frames.get(frames.size() - 1);
    }

    @SuppressWarnings("unchecked")
    private static Frame frameOf(Map<String, Object> v) {
        Map<String, Object> f = (Map<String, Object>) v.get("fields");
        switch ((String) v.get("type")) {
            case "clientHello":
            case "serverHello": {
                List<Long> ext = new ArrayList<>();
                for (Object e : (List<Object>) f.get("extensions")) {
                    ext.add(num(e));
                }
                return new Frame.Hello("serverHello".equals(v.get("type")), (int) num(f.get("version")), ext);
            }
            case "goodbye":
                return new Frame.Goodbye((String) f.get("reason"));
            case "subscribe":
                return new Frame.Subscribe((String) f.get("publisher"), num(f.get("subscriber")), num(f.get("initial_demand")));
            case "request":
                return new Frame.Request(num(f.get("subscriber")), num(f.get("demand")));
            case "cancel":
                return new Frame.Cancel(num(f.get("subscriber")));
            case "onSubscribe":
                return new Frame.OnSubscribe(num(f.get("subscriber")), num(f.get("element_size")));
            case "onNext":
                return new Frame.OnNext(num(f.get("subscriber")), bytes(f.get("element")));
            case "onNextPacked":
                return new Frame.OnNextPacked(num(f.get("subscriber")), num(f.get("count")), bytes(f.get("elements")));
            case "onNextPart":
            case "onNextLastPart":
                return new Frame.OnNextPart("onNextLastPart".equals(v.get("type")), num(f.get("subscriber")),
                        num(f.get("element_id")), bytes(f.get("data")));
            case "onComplete":
                return new Frame.OnComplete(num(f.get("subscriber")));
            case "onError":
                return new Frame.OnError(num(f.get("subscriber")), (String) f.get("error"));
            default:
                if (f.containsKey("payload")) {
                    return new Frame.Extension((int) num(f.get("type")), bytes(f.get("payload")));
                }
                throw new AssertionError("a vector of an unknown type: " + v.get("type"));
        }
    }

    private static long num(Object o) {
        return ((BigInteger) o).longValue();
    }

    @SuppressWarnings("unchecked")
    private static byte[] bytes(Object o) {
        return Hex.decode((String) ((Map<String, Object>) o).get("hex"));
    }
}
