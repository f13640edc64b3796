package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.rstreams.testing.Hex;
import io.rstreams.testing.Json;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RepoPaths;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Event;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.Limits;
import io.rstreams.wire.ProtocolException;
import java.math.BigInteger;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import org.testng.annotations.Test;

/**
 * What this binding says goodbye with, byte for byte as rstreams (the reference) says it: the same
 * peer bytes fed to a Java {@link Connection} and to rstreams.wire's Connection end both with the
 * same goodbye reason and the same onError text. The cases (resources/python/goodbye_texts.py, the
 * same as the JavaScript binding's test/goodbye-texts.test.mjs): the 'invalid' vectors of
 * docs/protocol-vectors.json, the malformed qualifiers of its 'invalid_payloads', and the other
 * framing, handshake, stream and limit errors of PROTOCOL.md §2-§8, §11 and §14; and the malformed
 * resumes a server refuses for their form (§16.2, §16.7), read as {@link ResumeSniffer} reads them
 * ({@link ResumeFrames#take}, then {@link ResumeFrames#tokenAndPosition}); and numbers as a timeout
 * in a goodbye is written ({@link PythonG}, Python's {@code format(x, "g")}); and the answers a server
 * may give a resume, each read as a resuming client reads it (§16.3, §16.6). One Python process gives
 * rstreams' texts for all of them.
 *
 * <p>The §11 limits are named as rstreams names them (max_string_length=65536), not as this
 * binding's {@link Limits} components (maxStringLength): every word is rstreams', and the hostile
 * peer tests (tests/conformance/test_hostile_polyglot.py) look for those names in what the Java
 * server says.
 */
public class GoodbyeTextsTest {
    private static List<Object> reference;

    /** rstreams' texts: [cases, resumes, numbers, answers] of goodbye_texts.py (one Python process, on first use). */
    @SuppressWarnings("unchecked")
    private static synchronized List<Object> reference() throws Exception {
        if (reference == null) {
            PythonRstreams.Result run = PythonRstreams.run(25,
                    RepoPaths.root().resolve("java/src/test/resources/python/goodbye_texts.py").toString(),
                    RepoPaths.root().toString());
            assertEquals(run.status(), 0, run.output());
            reference = (List<Object>) Json.parse(run.output());
        }
        return reference;
    }

    private static int intOr(Object value, int otherwise) {
        return value == null ? otherwise : ((BigInteger) value).intValue();
    }

    /** This binding's [goodbye reason, onError text] for one case of goodbye_texts.py. */
    @SuppressWarnings("unchecked")
    private static List<String> ours(List<Object> c) throws ProtocolException {
        String side = (String) c.get(1);
        Map<String, Object> limits = (Map<String, Object>) c.get(2);
        Set<Long> extensions = new HashSet<>();
        for (Object e : (List<Object>) limits.getOrDefault("extensions", List.of())) {
            extensions.add(((BigInteger) e).longValue());
        }
        Limits d = Limits.DEFAULT;
        Limits l = new Limits(intOr(limits.get("max_element_size"), d.maxElementSize()), d.maxStringLength(),
                d.maxNameLength(), d.maxSubscriptions(), intOr(limits.get("max_parts_in_flight"), d.maxPartsInFlight()),
                intOr(limits.get("max_reassembly_bytes"), (int) d.maxReassemblyBytes()), d.maxExtensions(), d.splitThreshold());
        Connection conn = new Connection(side.equals("client") ? Connection.Side.CLIENT : Connection.Side.SERVER, l, extensions);
        feed(conn, (String) c.get(3));
        if (side.equals("client")) {
            conn.subscribe("p", 1);
            conn.subscribe("p", 1);
            feed(conn, (String) c.get(4));
        }
        conn.dataToSend();
        conn.events();
        feed(conn, (String) c.get(5));
        if (Boolean.TRUE.equals(limits.get("eof"))) { // then the input ends
            conn.receiveEof();
        }
        String goodbye = null;
        for (Event e : conn.events()) {
            if (e instanceof Event.Closed closed && goodbye == null) {
                goodbye = closed.reason();
            }
        }
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        byte[] sent = conn.dataToSend();
        parser.feed(sent, 0, sent.length);
        String error = null;
        for (Frame f : parser.parseAll()) {
            if (f instanceof Frame.OnError e && error == null) {
                error = e.error();
            }
        }
        List<String> texts = new ArrayList<>();
        texts.add(goodbye);
        texts.add(error);
        return texts;
    }

    private static void feed(Connection conn, String hex) {
        byte[] data = Hex.decode(hex);
        conn.receiveData(data, 0, data.length);
    }

    /** This binding's texts for one case of goodbye_texts.py, in the order of rstreams' in it. */
    private interface Ours {
        List<String> of(List<Object> c) throws ProtocolException;
    }

    /**
     * Checks {@code cases} (more than {@code least} of them) whose rstreams texts, named {@code what},
     * stand from index {@code at} on: each of {@code ours} must be the same, byte for byte; the
     * failure lists every case that differs.
     */
    @SuppressWarnings("unchecked")
    private static void sameAsRstreams(Object cases, int least, List<String> what, int at, Ours ours) throws Exception {
        List<Object> all = (List<Object>) cases;
        assertTrue(all.size() > least, what + ": " + all.size() + " cases");
        List<String> differ = new ArrayList<>();
        for (Object o : all) {
            List<Object> c = (List<Object>) o;
            List<String> got = ours.of(c);
            for (int k = 0; k < what.size(); k++) {
                if (!Objects.equals(got.get(k), c.get(at + k))) {
                    differ.add(c.get(0) + ", " + what.get(k) + ":\n  rstreams: " + c.get(at + k) + "\n  Java:     " + got.get(k));
                }
            }
        }
        assertEquals(differ.size(), 0, "\n" + String.join("\n", differ));
    }

    @Test(timeOut = 30_000)
    public void everyCaseEndsWithRstreamsGoodbyeReasonOrOnErrorTextByteForByte() throws Exception {
        sameAsRstreams(reference().get(0), 50, List.of("goodbye", "onError"), 6, GoodbyeTextsTest::ours);
    }

    /** The reason of the resumeRefused a server answers {@code hex} with (ResumeSniffer's reading), or null. */
    private static String refusal(String hex) {
        ByteBuf in = Unpooled.wrappedBuffer(Hex.decode(hex));
        try {
            byte[][] message = ResumeFrames.take(in);
            if (message == null) {
                return "(waits for more bytes)";
            }
            ResumeFrames.tokenAndPosition(message[1]);
            return "(accepted)";
        } catch (ProtocolException e) {
            return e.getMessage();
        } finally {
            in.release();
        }
    }

    @Test(timeOut = 30_000)
    public void aMalformedResumeIsRefusedWithRstreamsReasonByteForByte() throws Exception {
        sameAsRstreams(reference().get(1), 10, List.of("resumeRefused"), 2, r -> List.of(refusal((String) r.get(1))));
    }

    /**
     * What a resuming client makes of {@code hex}, the server's answer to its resume, as {@link
     * ResumeHandshake} reads it ({@link ResumeFrames.AnswerReader}) and words the session's failure.
     */
    private static String outcome(String hex) {
        ByteBuf in = Unpooled.wrappedBuffer(Hex.decode(hex));
        try {
            ResumeFrames.Answer answer = new ResumeFrames.AnswerReader().read(in);
            if (answer == null) {
                return "(waits for more bytes)";
            }
            return answer.refused() != null ? "the server refused to resume the session: " + answer.refused()
                    : "resumed at " + answer.position();
        } catch (ProtocolException e) {
            return "the session could not be resumed: " + e.getMessage();
        } finally {
            in.release();
        }
    }

    @Test(timeOut = 30_000)
    public void aResumingClientReadsTheAnswerAsRstreamsDoesAndFailsWithItsTextByteForByte() throws Exception {
        // a malformed answer fails the session at once, as in rstreams (PROTOCOL.md §16.2, §16.6)
        sameAsRstreams(reference().get(3), 15, List.of("outcome"), 2, a -> List.of(outcome((String) a.get(1))));
    }

    @Test(timeOut = 30_000)
    public void pythonGWritesEveryNumberAsPythonsFormatGDoes() throws Exception {
        sameAsRstreams(reference().get(2), 1000, List.of("format(x, 'g')"), 1,
                n -> List.of(PythonG.of(Double.parseDouble((String) n.get(0)))));
    }

    @Test(timeOut = 30_000)
    public void aTimeoutInAGoodbyeIsWrittenAsRstreamsWritesIt() {
        assertEquals(PythonG.seconds(Duration.ofNanos(100_000)), "0.0001");
        assertEquals(PythonG.seconds(Duration.ofSeconds(1_000_000)), "1e+06");
        assertEquals(PythonG.seconds(Duration.ofMillis(1500)), "1.5");
        assertEquals(PythonG.seconds(Duration.ofSeconds(60)), "60");
        assertEquals(PythonG.seconds(Duration.ofNanos(10_000)), "1e-05");
    }
}
