package io.rstreams.testing;

import static org.testng.Assert.assertTrue;

import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import io.rstreams.wire.ProtocolException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import javax.net.ssl.SSLSocket;

/**
 * Raw TCP for tests that play one end of a connection byte by byte: a socket to a server of
 * 127.0.0.1, a loopback listener that answers nothing, and what the other end wrote, parsed as
 * RS.io, until it closed; a WebSocket upgrade written by hand and the server's HTTP answer.
 * Every read is bounded by {@link #READ_DEADLINE_MS}.
 */
public final class RawSockets {
    /** How long one read may block: a hang guard, not a speed check. */
    public static final int READ_DEADLINE_MS = 20_000;

    private RawSockets() {}

    /** A socket to {@code port} of 127.0.0.1, its reads bounded. */
    public static Socket connect(int port) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        return bounded(socket);
    }

    /** A listener on a free loopback port (backlog 1) that answers nothing until accepted. */
    public static ServerSocket listen() throws IOException {
        return new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    }

    /** The next connection to {@code listener}, its reads bounded. */
    public static Socket accept(ServerSocket listener) throws IOException {
        return bounded(listener.accept());
    }

    private static Socket bounded(Socket socket) throws IOException {
        try {
            socket.setSoTimeout(READ_DEADLINE_MS);
            return socket;
        } catch (IOException e) {
            socket.close();
            throw e;
        }
    }

    /** Everything the other end writes until it closes (or resets: the frames before it count). */
    public static List<Frame> readToTheEnd(Socket socket) throws IOException, ProtocolException {
        InputStream in = socket.getInputStream();
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[4096];
        try {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                parser.feed(buffer, 0, n);
                frames.addAll(parser.parseAll());
            }
        } catch (SocketException reset) {
            // the frames before it count
        }
        return frames;
    }

    /**
     * Everything the other end writes until it closes, its goodbye answered with a goodbye as
     * a peer that speaks RS.io answers it (PROTOCOL.md §9.1), so that its close ends at the
     * answer rather than at its close timeout (five seconds).
     */
    public static List<Frame> answeringTheGoodbye(Socket socket) throws IOException, ProtocolException {
        InputStream in = socket.getInputStream();
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[4096];
        boolean answered = false;
        try {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                parser.feed(buffer, 0, n);
                frames.addAll(parser.parseAll());
                if (!answered && frames.stream().anyMatch(f -> f instanceof Frame.Goodbye)) {
                    answered = true;
                    socket.getOutputStream().write(FrameWriter.encode(new Frame.Goodbye(""), 0));
                    socket.getOutputStream().flush();
                }
            }
        } catch (SocketException reset) {
            // the frames before it count
        }
        return frames;
    }

    /**
     * A WebSocket upgrade of {@code path} on 127.0.0.1:{@code port} (the key of RFC 6455's
     * example), then {@code lines} (header lines without their CRLF), then the empty line.
     */
    public static String upgradeRequest(int port, String path, List<String> lines) {
        StringBuilder request = new StringBuilder("GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n"
                + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                + "Sec-WebSocket-Version: 13\r\n");
        for (String line : lines) {
            request.append(line).append("\r\n");
        }
        return request.append("\r\n").toString();
    }

    /**
     * Sends {@code request} to 127.0.0.1:{@code port} (over TLS, trusting {@link TlsFixture}'s
     * certificate, when {@code tls}) and returns the HTTP answer: a 101's status line and headers
     * (the connection stays open after them), any other answer all of it, to the end of input.
     */
    public static String httpAnswer(int port, boolean tls, String request) throws Exception {
        try (Socket socket = tls
                ? TlsFixture.get().client.getSocketFactory().createSocket("127.0.0.1", port)
                : new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(READ_DEADLINE_MS);
            if (socket instanceof SSLSocket secure) {
                secure.startHandshake();
            }
            socket.getOutputStream().write(request.getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                got.write(buffer, 0, n);
                String sofar = got.toString(StandardCharsets.UTF_8);
                if (sofar.startsWith("HTTP/1.1 101 ") && sofar.contains("\r\n\r\n")) {
                    return sofar.substring(0, sofar.indexOf("\r\n\r\n") + 4);
                }
            }
            return got.toString(StandardCharsets.UTF_8);
        }
    }

    /** The reason of the goodbye that came last in {@code frames}; fails if none did. */
    public static String lastGoodbye(List<Frame> frames) {
        assertTrue(!frames.isEmpty() && frames.get(frames.size() - 1) instanceof Frame.Goodbye,
                "no goodbye came last: " + frames);
        return ((Frame.Goodbye) frames.get(frames.size() - 1)).reason();
    }
}
