package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The Java client over {@code ws://} facing a server that misbehaves, played by a raw socket that
 * answers the upgrade itself: one that pings and never reads is cut off once the pongs unsent to
 * it pass MAX_UNSENT (PROTOCOL.md §6.3, {@link PongLimit}, the client side of
 * WebSocketLimitsTest's server case); one that dies in the middle of a stream (its input ends,
 * no close frame, no goodbye) ends the client's streams with the same error as a TCP server
 * that dies there (§9.3), a raw one whose output ends and a Python one killed alike; one that
 * sends a masked frame gets a close 1002 saying so, and its answering close ends the connection.
 */
public class WebSocketClientTest {
    private static final byte[] ELEMENT = {7};

    /** Accepts the client's upgrade on {@code listener}: 101 with the rsio.v0 subprotocol (RFC 6455 §4.2.2). */
    private static Socket acceptUpgrade(ServerSocket listener) throws Exception {
        Socket socket = RawSockets.accept(listener);
        InputStream in = socket.getInputStream();
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (!head.toString(StandardCharsets.US_ASCII).endsWith("\r\n\r\n")) {
            int b = in.read();
            if (b < 0) {
                throw new EOFException("the upgrade ended early: " + head);
            }
            head.write(b);
        }
        String key = head.toString(StandardCharsets.US_ASCII).lines()
                .filter(l -> l.toLowerCase(Locale.ROOT).startsWith("sec-websocket-key:"))
                .map(l -> l.substring(l.indexOf(':') + 1).trim()).findFirst().orElseThrow();
        byte[] digest = MessageDigest.getInstance("SHA-1")
                .digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().write(("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: " + Base64.getEncoder().encodeToString(digest) + "\r\n"
                + "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
        return socket;
    }

    /** A server's frame (not masked) of at most 125 bytes. */
    private static byte[] frame(int opcode, byte[] payload) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x80 | opcode);
        out.write(payload.length);
        out.writeBytes(payload);
        return out.toByteArray();
    }

    private static byte[] rsio(Frame... frames) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (Frame f : frames) {
            out.writeBytes(FrameWriter.encode(f, 0));
        }
        return out.toByteArray();
    }

    /** Reads the client's frames (over WebSocket: its masked messages' payloads) until it has asked for an element; returns its id. */
    private static long awaitDemand(InputStream raw, boolean websocket) throws Exception {
        DataInputStream in = new DataInputStream(raw);
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        while (true) {
            byte[] bytes;
            if (websocket) {
                in.readUnsignedByte();
                long n = in.readUnsignedByte() & 0x7F; // a client's frames are masked
                n = n == 126 ? in.readUnsignedShort() : n == 127 ? in.readLong() : n;
                byte[] mask = new byte[4];
                in.readFully(mask);
                bytes = new byte[(int) n];
                in.readFully(bytes);
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] ^= mask[i % 4];
                }
            } else {
                bytes = new byte[] {(byte) in.readUnsignedByte()};
            }
            parser.feed(bytes, 0, bytes.length);
            for (Frame f : parser.parseAll()) {
                if (f instanceof Frame.Subscribe s && s.initialDemand() > 0 || f instanceof Frame.Request r && r.demand() > 0) {
                    return f instanceof Frame.Subscribe s ? s.subscriber() : ((Frame.Request) f).subscriber();
                }
            }
        }
    }

    private static final byte[] SERVER_HELLO = rsio(new Frame.Hello(true, 0, List.of()));

    @Test(timeOut = 120_000)
    public void aServerThatPingsAndNeverReadsIsCutOff() throws Exception {
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().keepalive(null).build()) {
            CompletableFuture<RsioConnection> connecting = client.connect("ws://127.0.0.1:" + listener.getLocalPort() + "/rsio");
            try (Socket server = acceptUpgrade(listener)) {
                OutputStream out = server.getOutputStream();
                out.write(frame(2, SERVER_HELLO));
                RsioConnection conn = connecting.get(20, TimeUnit.SECONDS);
                byte[] ping = frame(9, new byte[125]);
                PingFlood flood = PingFlood.write(out, ping, 4 * Endpoint.MAX_UNSENT);
                // each 127-byte ping owes a 131-byte pong (a client's frames are masked)
                assertTrue(flood.cutOffPastMaxUnsent(ping.length, ping.length + 4),
                        "sent " + flood.sent() + " bytes of pings, cut off: " + flood.cutOff());
                conn.onClose().get(20, TimeUnit.SECONDS);
                assertTrue(!conn.isOpen());
            }
        }
    }

    /**
     * The status and reason of the close the client answers {@code sent} with (a server's frame,
     * after its hello), without a goodbye before it; the server's answering close (or, when
     * {@code sent} was its close, the end of its output) then ends the connection.
     */
    private static String clientsClose(byte[] sent) throws Exception {
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().keepalive(null).build()) {
            CompletableFuture<RsioConnection> connecting = client.connect("ws://127.0.0.1:" + listener.getLocalPort() + "/rsio");
            try (Socket server = acceptUpgrade(listener)) {
                OutputStream out = server.getOutputStream();
                out.write(frame(2, SERVER_HELLO));
                RsioConnection conn = connecting.get(20, TimeUnit.SECONDS);
                out.write(sent);
                DataInputStream in = new DataInputStream(server.getInputStream());
                FrameParser parser = new FrameParser(Limits.DEFAULT);
                while (true) { // the client's frames (masked) up to its close
                    int opcode = in.readUnsignedByte() & 0x0F;
                    int n = in.readUnsignedByte() & 0x7F;
                    n = n == 126 ? in.readUnsignedShort() : n;
                    byte[] mask = new byte[4];
                    in.readFully(mask);
                    byte[] payload = new byte[n];
                    in.readFully(payload);
                    for (int i = 0; i < n; i++) {
                        payload[i] ^= mask[i % 4];
                    }
                    if (opcode == 2) {
                        parser.feed(payload, 0, n);
                        for (Frame f : parser.parseAll()) {
                            assertTrue(!(f instanceof Frame.Goodbye), "a goodbye before the close: " + f);
                        }
                    }
                    if (opcode == 8) {
                        if ((sent[0] & 0x0F) == 8) {
                            server.shutdownOutput(); // its close was sent (and refused): it ends its output, the client its connection
                        } else {
                            out.write(frame(8, new byte[] {0x03, (byte) 0xEA})); // the server answers the close: the client ends the TCP connection
                        }
                        assertEquals(in.read(), -1);
                        conn.onClose().get(20, TimeUnit.SECONDS);
                        return (((payload[0] & 0xFF) << 8) | (payload[1] & 0xFF)) + " " + new String(payload, 2, n - 2, StandardCharsets.UTF_8);
                    }
                }
            }
        }
    }

    @Test(timeOut = 60_000)
    public void aMaskedFrameFromTheServerIsClosedWith1002SayingWhy() throws Exception {
        // a server's frame must not be masked
        assertEquals(clientsClose(new byte[] {(byte) 0x82, (byte) 0x81, 1, 2, 3, 4, 5}), "1002 incorrect masking (PROTOCOL.md §1)");
    }

    @Test(timeOut = 60_000)
    public void aTextMessageFromTheServerIsClosedWith1003UTF8OrNot() throws Exception {
        // §1: RS.io is binary; a text message that is not UTF-8 is refused the same way
        assertEquals(clientsClose(frame(1, "text".getBytes(StandardCharsets.UTF_8))), "1003 RS.io uses binary messages");
        assertEquals(clientsClose(frame(1, new byte[] {'t', (byte) 0xFF, 'x'})), "1003 RS.io uses binary messages");
    }

    @Test(timeOut = 60_000)
    public void aCloseFromTheServerWhoseReasonIsNotUtf8IsAnsweredWith1007() throws Exception {
        assertEquals(clientsClose(frame(8, new byte[] {0x03, (byte) 0xE8, 't', (byte) 0xFF})),
                "1007 a close reason that is not UTF-8 (PROTOCOL.md §1)");
    }

    /** The error the client's stream ends with when its server's input ends after an element, over TCP or WebSocket. */
    private static Throwable cutMidStream(boolean websocket) throws Exception {
        try (ServerSocket listener = RawSockets.listen();
             RsioClient client = RsioClient.builder().keepalive(null).build()) {
            String url = (websocket ? "ws" : "tcp") + "://127.0.0.1:" + listener.getLocalPort() + (websocket ? "/rsio" : "");
            CompletableFuture<RsioConnection> connecting = client.connect(url);
            try (Socket server = websocket ? acceptUpgrade(listener) : RawSockets.accept(listener)) {
                server.getOutputStream().write(websocket ? frame(2, SERVER_HELLO) : SERVER_HELLO);
                RsioConnection conn = connecting.get(20, TimeUnit.SECONDS);
                TestSubscriber<byte[]> sub = new TestSubscriber<>();
                conn.publisher("endless").subscribe(sub);
                sub.request(10);
                long id = awaitDemand(server.getInputStream(), websocket);
                byte[] element = rsio(new Frame.OnSubscribe(id, 0), new Frame.OnNext(id, ELEMENT));
                server.getOutputStream().write(websocket ? frame(2, element) : element);
                assertEquals(sub.take(1).get(0), ELEMENT);
                server.shutdownOutput(); // the server's process ends: its input to the client ends, nothing else comes
                return sub.awaitTerminal();
            }
        }
    }

    /** The error the client's stream of a Python server at {@code where} ends with when that process is killed mid-stream. */
    private static Throwable killedMidStream(String where) throws Exception {
        try (PythonRstreams python = PythonRstreams.serveAt(where);
             RsioClient client = RsioClient.builder().keepalive(null).build();
             RsioConnection conn = client.connect(python.url()).get(20, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?rate=20", Codec.UTF8).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            assertEquals(sub.take(1), List.of("0"));
            python.kill();
            return sub.awaitTerminal();
        }
    }

    @Test(timeOut = 120_000)
    public void aKilledPythonWebSocketServerEndsTheStreamAsAKilledTcpServerDoes() throws Exception {
        Throwable tcp = killedMidStream("tcp://127.0.0.1:0");
        Throwable ws = killedMidStream("ws://127.0.0.1:0/rsio");
        assertTrue(tcp instanceof ConnectionClosedException, String.valueOf(tcp));
        assertEquals(tcp.getMessage(), "the peer closed the connection without a goodbye (PROTOCOL.md §9.3)");
        assertTrue(ws instanceof ConnectionClosedException, String.valueOf(ws));
        assertEquals(ws.getMessage(), tcp.getMessage());
    }

    @Test(timeOut = 60_000)
    public void aWebSocketServerDyingMidStreamEndsTheStreamAsATcpServerDoes() throws Exception {
        Throwable tcp = cutMidStream(false);
        Throwable ws = cutMidStream(true);
        assertTrue(tcp instanceof ConnectionClosedException, String.valueOf(tcp));
        assertEquals(tcp.getMessage(), "the peer closed the connection without a goodbye (PROTOCOL.md §9.3)");
        assertTrue(ws instanceof ConnectionClosedException, String.valueOf(ws));
        assertEquals(ws.getMessage(), tcp.getMessage());
    }
}
