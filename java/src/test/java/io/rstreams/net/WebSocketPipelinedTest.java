package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.testng.annotations.Test;

/**
 * Bytes sent in the same write as the WebSocket upgrade request, at the Java server (PROTOCOL.md
 * §1): they are read as WebSocket frames, as every byte after the upgrade is. A binary message
 * right behind the request is served; RS.io bytes without WebSocket framing get a close 1002
 * (protocol error) and are not served, as the Python and JavaScript servers do; a text message
 * there gets its 1003 after the 101. Before, the bytes the HTTP decoder had left went to RS.io
 * unread as frames: unframed RS.io was served, and a frame's header byte was taken for an RS.io
 * message type.
 */
public class WebSocketPipelinedTest {
    private static final byte[] MASK = {5, 6, 7, 8};
    private static final byte[] CLIENT_HELLO = {0x01, 0x00, 0x00};

    /** What the server sent after its 101: RS.io frames, and its close status (-1: none, the end). */
    private record Answer(List<Frame> frames, int closeStatus) {}

    /** A masked binary message of one frame (payloads under 126 bytes). */
    private static byte[] binaryMessage(byte[] payload) {
        return message(0x82, payload);
    }

    /** A masked message of one frame, {@code first} its first byte (payloads under 126 bytes). */
    private static byte[] message(int first, byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(first);
        out.write(0x80 | payload.length);
        out.writeBytes(MASK);
        for (int i = 0; i < payload.length; i++) {
            out.write(payload[i] ^ MASK[i % 4]);
        }
        return out.toByteArray();
    }

    /** Writes the upgrade request and {@code behind} in one write; reads the answer to a close, or a serverHello. */
    private static Answer upgradeWith(byte[] behind) throws Exception {
        try (RsioServer server = RsioServer.builder().bind("ws://127.0.0.1:0/rsio");
             Socket socket = RawSockets.connect(server.port())) {
            ByteArrayOutputStream request = new ByteArrayOutputStream();
            request.writeBytes(RawSockets.upgradeRequest(server.port(), "/rsio",
                    List.of("Sec-WebSocket-Protocol: rsio.v0")).getBytes(StandardCharsets.US_ASCII));
            request.writeBytes(behind);
            socket.getOutputStream().write(request.toByteArray());
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    throw new EOFException("no answer to the upgrade: " + head);
                }
                head.write(b);
            }
            assertTrue(head.toString(StandardCharsets.US_ASCII).startsWith("HTTP/1.1 101 "), head.toString());
            return read(new DataInputStream(in));
        }
    }

    private static Answer read(DataInputStream in) throws Exception {
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        try {
            while (true) {
                int first = in.readUnsignedByte();
                long n = in.readUnsignedByte() & 0x7F; // a server's frames are not masked
                if (n == 126) {
                    n = in.readUnsignedShort();
                } else if (n == 127) {
                    n = in.readLong();
                }
                byte[] payload = new byte[(int) n];
                in.readFully(payload);
                int opcode = first & 0x0F;
                if (opcode == 8) {
                    return new Answer(frames, n >= 2 ? ((payload[0] & 0xFF) << 8) | (payload[1] & 0xFF) : -1);
                }
                if (opcode == 2 || opcode == 0) {
                    parser.feed(payload, 0, payload.length);
                    frames.addAll(parser.parseAll());
                    if (frames.stream().anyMatch(f -> f instanceof Frame.Hello)) {
                        return new Answer(frames, -1);
                    }
                }
            }
        } catch (EOFException | SocketException ended) {
            return new Answer(frames, -1);
        }
    }

    @Test(timeOut = 60_000)
    public void aBinaryMessageRightBehindTheUpgradeIsServed() throws Exception {
        Answer answer = upgradeWith(binaryMessage(CLIENT_HELLO));
        assertEquals(answer.frames().size(), 1, answer.toString());
        Frame.Hello hello = (Frame.Hello) answer.frames().get(0);
        assertTrue(hello.fromServer(), answer.toString());
    }

    @Test(timeOut = 60_000)
    public void aTextMessageRightBehindTheUpgradeIsClosedWith1003AfterThe101() throws Exception {
        Answer answer = upgradeWith(message(0x81, "text".getBytes(StandardCharsets.UTF_8)));
        assertEquals(answer.closeStatus(), 1003, answer.toString());
        assertTrue(answer.frames().isEmpty(), answer.toString());
    }

    @Test(timeOut = 60_000)
    public void rsioBytesWithoutWebSocketFramingAreClosedWith1002AndNotServed() throws Exception {
        Answer answer = upgradeWith(CLIENT_HELLO);
        assertEquals(answer.closeStatus(), 1002, answer.toString());
        assertTrue(answer.frames().isEmpty(), answer.toString());
    }
}
