package io.rstreams.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy on 127.0.0.1 that forwards to a target and can cut every link it carries at once
 * (a reset, as when a network path dies): the tool for testing session resumption.
 */
public final class CuttingProxy implements AutoCloseable {
    private final ServerSocket listener;
    private final InetSocketAddress target;
    private final List<Socket> open = new CopyOnWriteArrayList<>();
    /** Connections accepted so far. */
    public final AtomicInteger accepted = new AtomicInteger();

    public CuttingProxy(String host, int port) throws IOException {
        this.target = new InetSocketAddress(host, port);
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread t = new Thread(this::acceptLoop, "cutting-proxy");
        t.setDaemon(true);
        t.start();
    }

    public int port() {
        return listener.getLocalPort();
    }

    private void acceptLoop() {
        while (!listener.isClosed()) {
            try {
                Socket in = listener.accept();
                Socket out = new Socket(target.getAddress(), target.getPort());
                in.setTcpNoDelay(true);
                out.setTcpNoDelay(true);
                open.add(in);
                open.add(out);
                accepted.incrementAndGet();
                pump(in, out);
                pump(out, in);
            } catch (IOException e) {
                return;
            }
        }
    }

    private void pump(Socket from, Socket to) {
        Thread t = new Thread(() -> {
            byte[] buf = new byte[16384];
            try (InputStream i = from.getInputStream(); OutputStream o = to.getOutputStream()) {
                for (int n = i.read(buf); n >= 0; n = i.read(buf)) {
                    o.write(buf, 0, n);
                }
            } catch (IOException e) {
                // cut or closed
            }
            closeQuietly(to);
        }, "cutting-proxy-pump");
        t.setDaemon(true);
        t.start();
    }

    /** Resets every link now carried; new connections are accepted as before. */
    public void cut() {
        for (Socket s : open) {
            try {
                s.setSoLinger(true, 0);
            } catch (IOException e) {
                // already closed
            }
            closeQuietly(s);
        }
        open.clear();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    @Override
    public void close() throws IOException {
        listener.close();
        cut();
    }
}
