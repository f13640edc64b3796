package io.rstreams.testing;

import static org.testng.Assert.assertTrue;

import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.Limits;
import io.rstreams.wire.ProtocolException;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.util.ArrayList;
import java.util.List;

/**
 * Raw TCP for tests that play one end of a connection byte by byte: a socket to a server of
 * 127.0.0.1, a loopback listener that answers nothing, and what the other end wrote, parsed as
 * RS.io, until it closed. Every read is bounded by {@link #READ_DEADLINE_MS}.
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

    /** The reason of the goodbye that came last in {@code frames}; fails if none did. */
    public static String lastGoodbye(List<Frame> frames) {
        assertTrue(!frames.isEmpty() && frames.get(frames.size() - 1) instanceof Frame.Goodbye,
                "no goodbye came last: " + frames);
        return ((Frame.Goodbye) frames.get(frames.size() - 1)).reason();
    }
}
