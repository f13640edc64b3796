package io.rstreams.net;

import io.netty.channel.Channel;
import io.netty.channel.IoHandlerFactory;
import io.netty.channel.ServerChannel;
import io.netty.channel.epoll.Epoll;
import io.netty.channel.epoll.EpollDomainSocketChannel;
import io.netty.channel.epoll.EpollIoHandler;
import io.netty.channel.epoll.EpollServerDomainSocketChannel;
import io.netty.channel.epoll.EpollServerSocketChannel;
import io.netty.channel.epoll.EpollSocketChannel;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.nio.NioDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerDomainSocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;
import io.netty.channel.unix.DomainSocketAddress;
import java.net.SocketAddress;

/**
 * Which of Netty's transports the client and server use: the native epoll transport where it
 * loads (Linux, with {@code netty-transport-native-epoll} on the class path, a dependency of
 * this library), else the JDK's NIO. Epoll is the one that half-closes Unix sockets in both
 * directions: Netty's NIO byte channel honours {@code ALLOW_HALF_CLOSURE} only for TCP, so over
 * NIO a peer's half-close of a Unix socket closes the channel at once (PROTOCOL.md §10 asks an
 * endpoint that sent an error goodbye to keep reading until the peer's end of input; over NIO
 * the Java end still half-closes its own side, but cannot see the peer's end of input apart from
 * a close). The system property {@code rstreams.transport=nio} chooses NIO everywhere.
 */
final class Transport {
    private Transport() {}

    /** True where the native epoll transport is used. */
    static final boolean EPOLL = epollUsable();

    private static boolean epollUsable() {
        if ("nio".equals(System.getProperty("rstreams.transport"))) {
            return false;
        }
        try {
            return Epoll.isAvailable();
        } catch (LinkageError e) { // the epoll classes are not on the class path
            return false;
        }
    }

    /**
     * Whether channels of this kind take {@code ALLOW_HALF_CLOSURE}: TCP always, Unix sockets on
     * epoll only (NIO's Unix channel does not know the option, and Netty would log that).
     */
    static boolean halfCloses(boolean unix) {
        return EPOLL || !unix;
    }

    static IoHandlerFactory ioHandler() {
        return EPOLL ? EpollIoHandler.newFactory() : NioIoHandler.newFactory();
    }

    static Class<? extends Channel> channel(boolean unix) {
        if (EPOLL) {
            return unix ? EpollDomainSocketChannel.class : EpollSocketChannel.class;
        }
        return unix ? NioDomainSocketChannel.class : NioSocketChannel.class;
    }

    static Class<? extends ServerChannel> serverChannel(boolean unix) {
        if (EPOLL) {
            return unix ? EpollServerDomainSocketChannel.class : EpollServerSocketChannel.class;
        }
        return unix ? NioServerDomainSocketChannel.class : NioServerSocketChannel.class;
    }

    /** A Unix socket's address as the transport takes it (epoll: its own address type). */
    static SocketAddress unixAddress(String path) {
        return EPOLL ? new DomainSocketAddress(path) : java.net.UnixDomainSocketAddress.of(path);
    }
}
