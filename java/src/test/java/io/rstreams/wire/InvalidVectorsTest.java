package io.rstreams.wire;

import static org.testng.Assert.assertTrue;
import static org.testng.Assert.fail;

import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import java.io.IOException;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/**
 * The 'invalid' byte strings of docs/protocol-vectors.json (PROTOCOL.md §13): this binding's parser,
 * with the default limits, refuses each, whole and fed byte by byte, citing the vector's section.
 */
public class InvalidVectorsTest {

    @DataProvider(name = "invalid")
    @SuppressWarnings("unchecked")
    public Object[][] invalid() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("docs/protocol-vectors.json"), StandardCharsets.UTF_8);
        List<Map<String, Object>> vectors = (List<Map<String, Object>>) ((Map<String, Object>) Json.parse(text)).get("invalid");
        assertTrue(vectors.size() >= 10, "expected the invalid vectors, got " + vectors.size());
        Object[][] out = new Object[vectors.size()][];
        for (int k = 0; k < out.length; k++) {
            out[k] = new Object[] {vectors.get(k).get("note"), vectors.get(k)};
        }
        return out;
    }

    @Test(dataProvider = "invalid", timeOut = 10_000)
    public void refusedCitingItsSection(String note, Map<String, Object> vector) throws Exception {
        byte[] bytes = Hex.decode((String) vector.get("hex"));
        long size = ((BigInteger) vector.get("element_size")).longValue();
        byte[] prefix = size == 0 ? new byte[0] : FrameWriter.encode(new Frame.OnSubscribe(1, size), 0);
        String cited = "(PROTOCOL.md §" + vector.get("section") + ")";

        FrameParser whole = new FrameParser(Limits.DEFAULT);
        whole.feed(prefix, 0, prefix.length);
        whole.feed(bytes, 0, bytes.length);
        expectRefusal(whole, note, cited);

        FrameParser drip = new FrameParser(Limits.DEFAULT);
        drip.feed(prefix, 0, prefix.length);
        try {
            drip.parseAll();
            for (int k = 0; k < bytes.length; k++) {
                drip.feed(bytes, k, 1);
                if (drip.next() != null) {
                    fail(note + ": a frame from an invalid byte string");
                }
            }
            fail(note + ": not refused byte by byte");
        } catch (ProtocolException e) {
            assertTrue(e.getMessage().endsWith(cited), note + ": " + e.getMessage());
        }
    }

    private static void expectRefusal(FrameParser parser, String note, String cited) {
        try {
            List<Frame> frames = parser.parseAll();
            fail(note + ": accepted as " + frames);
        } catch (ProtocolException e) {
            assertTrue(e.getMessage().endsWith(cited), note + ": " + e.getMessage());
        }
    }
}
