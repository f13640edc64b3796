package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.testng.annotations.Test;

/**
 * A resume naming a position the other side does not hold (PROTOCOL.md §16.3, §16.6): the
 * server refuses one outside its replay buffer, behind what was acknowledged or ahead of what
 * it sent, and the session fails; a client given such a position in resumed fails its session
 * and closes the transport. Loopback, one end played byte by byte.
 */
public class ResumePositionTest {
    /** The frames read from {@code socket} until one matches each of {@code wanted}, and how many bytes they took. */
    record Read(List<Frame> frames, long bytes) {
        byte[] token() {
            return frames.stream().filter(f -> f instanceof Frame.Extension x && x.type() == FrameType.RESUME_TOKEN)
                    .map(f -> ((Frame.Extension) f).payload()).findFirst().orElseThrow();
        }
    }

    @SafeVarargs
    static Read readUntil(Socket socket, Predicate<Frame>... wanted) throws Exception {
        InputStream in = socket.getInputStream();
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[4096];
        long bytes = 0;
        while (!List.of(wanted).stream().allMatch(w -> frames.stream().anyMatch(w))) {
            int n = in.read(buffer);
            assertTrue(n >= 0, "the other end closed after " + frames);
            bytes += n;
            parser.feed(buffer, 0, n);
            frames.addAll(parser.parseAll());
        }
        return new Read(frames, bytes);
    }

    static Predicate<Frame> extension(int type) {
        return f -> f instanceof Frame.Extension x && x.type() == type;
    }

    private static String refusal(List<Frame> answer) {
        assertEquals(answer.size(), 2, answer.toString()); // the hello (§4.1), then the refusal
        assertTrue(answer.get(0) instanceof Frame.Hello, answer.toString());
        Frame.Extension refused = (Frame.Extension) answer.get(1);
        assertEquals(refused.type(), FrameType.RESUME_REFUSED);
        return new String(refused.payload(), StandardCharsets.UTF_8);
    }

    /**
     * A session with a resuming server, whose hook subscribes to the client's {@code up} with
     * {@code hooked}: the clientHello offers resume only, and everything the server sends
     * before a resume is read (its hello, resumeToken, the hook's subscribe and its
     * acknowledgement of the hello), so the server's stream is {@link Read#bytes} long.
     */
    private static Read session(Socket first) throws Exception {
        first.getOutputStream().write(new byte[] {0x01, 0x00, 0x01, 0x03}); // clientHello [resume]
        return readUntil(first, extension(FrameType.RESUME_TOKEN), f -> f instanceof Frame.Subscribe,
                extension(FrameType.RESUME_ACK));
    }

    @Test(timeOut = 30_000)
    public void aResumeAheadOfTheServersStreamIsRefusedAndTheSessionFails() throws Exception {
        TestSubscriber<byte[]> hooked = new TestSubscriber<>();
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .onConnection(conn -> conn.publisher("up").subscribe(hooked))
                .bind("tcp://127.0.0.1:0");
             Socket first = RawSockets.connect(server.port());
             Socket second = RawSockets.connect(server.port())) {
            Read read = session(first);
            long ahead = read.bytes() + 1; // one byte the server never sent
            second.getOutputStream().write(ResumeFrames.resume(read.token(), ahead));
            String reason = "position " + ahead + " is outside the replay buffer (0.." + read.bytes()
                    + "): the two sides disagree on what was received (PROTOCOL.md §16.3)";
            assertEquals(refusal(RawSockets.readToTheEnd(second)), reason);
            Throwable failed = hooked.terminated.get(10, TimeUnit.SECONDS);
            assertTrue(failed instanceof ConnectionClosedException, String.valueOf(failed));
            assertEquals(failed.getMessage(), "the session could not be resumed: " + reason);
            RawSockets.readToTheEnd(first); // and its old transport is closed
        }
    }

    @Test(timeOut = 30_000)
    public void aResumeBehindWhatWasAcknowledgedIsRefusedAndTheSessionFails() throws Exception {
        TestSubscriber<byte[]> hooked = new TestSubscriber<>();
        try (RsioServer server = RsioServer.builder()
                .resume(true)
                .onConnection(conn -> conn.publisher("up").subscribe(hooked))
                .bind("tcp://127.0.0.1:0");
             Socket first = RawSockets.connect(server.port());
             Socket second = RawSockets.connect(server.port())) {
            Read read = session(first);
            OutputStream out = first.getOutputStream();
            out.write(FrameWriter.encode(new Frame.Extension(FrameType.RESUME_ACK, ResumeFrames.varint(read.bytes())), 0));
            first.shutdownOutput(); // the transport breaks after the acknowledgement: the server drops what it acknowledged
            RawSockets.readToTheEnd(first); // the server closed it: the acknowledgement was taken, the session waits
            assertTrue(!hooked.terminated.isDone(), "the session ended with its first transport");
            long behind = read.bytes() - 1; // one byte the server no longer holds
            second.getOutputStream().write(ResumeFrames.resume(read.token(), behind));
            String reason = "position " + behind + " is outside the replay buffer (" + read.bytes() + ".." + read.bytes()
                    + "): the two sides disagree on what was received (PROTOCOL.md §16.3)";
            assertEquals(refusal(RawSockets.readToTheEnd(second)), reason);
            Throwable failed = hooked.terminated.get(10, TimeUnit.SECONDS);
            assertTrue(failed instanceof ConnectionClosedException, String.valueOf(failed));
            assertEquals(failed.getMessage(), "the session could not be resumed: " + reason);
        }
    }

    private static final byte[] SERVER_HELLO = FrameWriter.encode(new Frame.Hello(true, 0, List.of(FrameType.RESUME_EXTENSION)), 0);

    /**
     * The error a resuming client's stream fails with when the server, played by hand, answers
     * its resume with {@code answer} (given how many bytes of the client's stream it read). The
     * first transport gets a hello [resume] and a token, then drops without a goodbye; the client
     * resumes on a second one with how much of that it received. Returns the error, and checks
     * that the client closed the second transport without a word.
     */
    private static Throwable answeredWith(java.util.function.LongFunction<byte[]> answer) throws Exception {
        byte[] token = "sixteen byte tok".getBytes(StandardCharsets.US_ASCII);
        byte[] opening = concat(SERVER_HELLO, FrameWriter.encode(new Frame.Extension(FrameType.RESUME_TOKEN, token), 0));
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().resume(true).build()) {
            TestSubscriber<byte[]> sub = new TestSubscriber<>();
            client.connect("tcp://127.0.0.1:" + listener.getLocalPort()).get(10, TimeUnit.SECONDS).publisher("counter").subscribe(sub);
            long sent;
            try (Socket first = RawSockets.accept(listener)) {
                first.getOutputStream().write(opening);
                // the client's stream: its hello, the subscribe, its acknowledgement of our opening
                sent = readUntil(first, f -> f instanceof Frame.Subscribe, extension(FrameType.RESUME_ACK)).bytes();
            } // the transport breaks without a goodbye: the client resumes
            try (Socket second = RawSockets.accept(listener)) {
                Frame.Extension resume = (Frame.Extension) readUntil(second, extension(FrameType.RESUME)).frames().get(0);
                Object[] tokenAndPosition = ResumeFrames.tokenAndPosition(resume.payload());
                assertEquals((byte[]) tokenAndPosition[0], token);
                assertEquals(tokenAndPosition[1], (long) opening.length, "the position: all the client received");
                second.getOutputStream().write(answer.apply(sent));
                Throwable failed = sub.awaitTerminal();
                assertTrue(failed instanceof ConnectionClosedException, String.valueOf(failed));
                assertEquals(RawSockets.readToTheEnd(second), List.of(), "the client closed the transport without a word");
                return failed;
            }
        }
    }

    @Test(timeOut = 30_000)
    public void aResumedPositionAheadOfTheClientsStreamFailsTheSession() throws Exception {
        // §16.6: a position beyond what the client ever sent; it fails and closes the transport
        long[] ahead = new long[2];
        Throwable failed = answeredWith(sent -> {
            ahead[0] = sent + 1;
            ahead[1] = sent;
            return concat(SERVER_HELLO, ResumeFrames.resumed(sent + 1));
        });
        assertEquals(failed.getMessage(), "the session could not be resumed: position " + ahead[0]
                + " is outside the replay buffer (0.." + ahead[1] + "): the two sides disagree on what was received (PROTOCOL.md §16.3)");
    }

    @Test(timeOut = 30_000)
    public void anAnswerOtherThanResumedFailsTheSessionInRstreamsWords() throws Exception {
        // a goodbye after the hello (a server at its connection limit, say) is a refusal, as rstreams reads it
        Throwable failed = answeredWith(sent -> concat(SERVER_HELLO, FrameWriter.encode(new Frame.Goodbye("too many connections"), 0)));
        assertEquals(failed.getMessage(), "the server refused to resume the session: too many connections");
        failed = answeredWith(sent -> concat(SERVER_HELLO, FrameWriter.encode(new Frame.Extension(FrameType.RESUME_ACK, ResumeFrames.varint(0)), 0)));
        assertEquals(failed.getMessage(), "the session could not be resumed: expected resumed or resumeRefused, got type 0x8c (PROTOCOL.md §16.3)");
        failed = answeredWith(sent -> FrameWriter.encode(new Frame.Hello(false, 0, List.of()), 0));
        assertEquals(failed.getMessage(), "the session could not be resumed: expected a hello of type 0x02, got type 0x01 (PROTOCOL.md §16.3)");
        failed = answeredWith(sent -> new byte[] {0x02, 0x01, 0x00});
        assertEquals(failed.getMessage(), "the session could not be resumed: a hello with version 1 on a version-0 session (PROTOCOL.md §16.3)");
    }

    @Test(timeOut = 30_000)
    public void aMalformedResumedFailsTheSessionAtOnce() throws Exception {
        // §16.2, §16.6: the server broke the protocol, and would again: no other attempt is made (the
        // harness accepts two transports; a further attempt would end in "could not resume ... in 8 attempt(s)")
        Throwable failed = answeredWith(sent -> concat(SERVER_HELLO, new byte[] {(byte) FrameType.RESUMED, 0x02, 0x00, 0x00}));
        assertEquals(failed.getMessage(), "the session could not be resumed: resumed: 1 byte(s) after the position (PROTOCOL.md §16.2)");
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}
