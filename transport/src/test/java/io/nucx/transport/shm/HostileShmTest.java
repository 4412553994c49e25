package io.nucx.transport.shm;

import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.HostId;
import io.nucx.transport.Iface;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A shm iface attacked through its Unix socket and through {@code /dev/shm}: stalled handshakes hold none of its
 * rings and are bounded in number; a link planted under a ring's name is never followed; a ring file of another
 * user is never mapped; the socket admits only its own user.
 */
@Timeout(120)
class HostileShmTest {

    private final ShmIfaces ifaces = new ShmIfaces();
    private final List<Path> files = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        ifaces.close();
        for (Path f : files) {
            Files.deleteIfExists(f);
        }
    }

    private Iface iface() throws Exception {
        return ifaces.open(ChannelInboundHandlerAdapter::new);
    }

    private static Path socketOf(Iface i) {
        ByteBuffer b = ByteBuffer.wrap(i.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
        return ShmFiles.socket(ShmFiles.DIR, b.getInt(), b.getInt());
    }

    private static long ifaceId(Iface i) {
        ByteBuffer b = ByteBuffer.wrap(i.ifaceAddress()).order(ByteOrder.LITTLE_ENDIAN);
        b.getInt();
        return Integer.toUnsignedLong(b.getInt());
    }

    /** Ring files named after {@code iface}: the ones it created. */
    private static long ringsOf(Iface iface) throws IOException {
        String prefix = "nucx-" + ShmFiles.pid() + "-" + ifaceId(iface) + "-";
        try (Stream<Path> s = Files.list(ShmFiles.DIR)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix)).count();
        }
    }

    /** A HELLO as a connector writes it ({@link ShmHandshake}), naming {@code first} and {@code second}. */
    private static ByteBuffer hello(long pid, long ifaceId, Path first, Path second) {
        byte[] a = first.toString().getBytes(StandardCharsets.UTF_8);
        byte[] b = second.toString().getBytes(StandardCharsets.UTF_8);
        int rest = 4 + 1 + 1 + 2 + 8 + 8 + 8 + 2 + a.length + 2 + b.length;
        return ByteBuffer.allocate(2 + rest).order(ByteOrder.LITTLE_ENDIAN).putShort((short) rest)
                .putInt(ShmHandshake.MAGIC).put((byte) ShmHandshake.VERSION).put((byte) ShmHandshake.HELLO)
                .putShort((short) 0).putLong(HostId.get()).putLong(pid).putLong(ifaceId).putShort((short) a.length)
                .put(a).putShort((short) b.length).put(b).flip();
    }

    private static boolean closedWithin(SocketChannel ch, long millis) throws IOException {
        ch.configureBlocking(false);
        ByteBuffer sink = ByteBuffer.allocate(256);
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        while (System.nanoTime() < deadline) {
            sink.clear();
            try {
                if (ch.read(sink) < 0) {
                    return true;
                }
            } catch (IOException reset) {
                return true;
            }
            Thread.onSpinWait();
        }
        return false;
    }

    /**
     * 200 handshakes that send a HELLO (or half of one) and stop: the iface creates no ring for any (the connector
     * creates both), at most {@link ShmHandshake#MAX_PENDING} are under way at once (the rest are closed at once),
     * and the stalled ones are closed by the timeout.
     */
    @Test
    void stalledHandshakesHoldNoRingAndAreBounded() throws Exception {
        Iface victim = iface();
        Path socket = socketOf(victim);
        List<SocketChannel> raw = new ArrayList<>();
        try {
            for (int i = 0; i < 200; i++) {
                SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
                ch.connect(UnixDomainSocketAddress.of(socket));
                ByteBuffer h = hello(ShmFiles.pid(), 888_888, ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid()
                        + "-888888-" + (2 * i + 1) + ".ring"), ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid()
                        + "-888888-" + (2 * i + 2) + ".ring"));
                h.limit(h.limit() / 2); // half a HELLO, then nothing
                ch.write(h);
                raw.add(ch);
            }
            int refusedAtOnce = 0;
            for (SocketChannel ch : raw) {
                if (closedWithin(ch, 50)) {
                    refusedAtOnce++;
                }
            }
            assertTrue(refusedAtOnce >= 200 - ShmHandshake.MAX_PENDING, refusedAtOnce + " of 200 stalled "
                    + "handshakes were refused at once; at most " + ShmHandshake.MAX_PENDING + " may wait");
            assertEquals(0, ringsOf(victim), "the iface created rings for handshakes that stalled");
            for (SocketChannel ch : raw) {
                assertTrue(closedWithin(ch, TimeUnit.SECONDS.toMillis(ShmHandshake.TIMEOUT_SECONDS + 10)),
                        "a stalled handshake outlived its timeout");
            }
        } finally {
            for (SocketChannel ch : raw) {
                ch.close();
            }
        }
        assertEquals(0, ringsOf(victim));
        Iface client = iface();
        client.connect(victim.deviceAddress(), victim.ifaceAddress(), new ChannelInboundHandlerAdapter())
                .sync().channel().close().sync();
    }

    /** A link with a ring file's name, pointing at a file of ours: neither mapped nor written, by open or create. */
    @Test
    void aLinkPlantedInDevShmIsNotFollowed() throws Exception {
        Path target = Files.createTempFile("nucx-victim", ".txt");
        files.add(target);
        byte[] content = "precious".repeat(1000).getBytes(StandardCharsets.US_ASCII);
        Files.write(target, content);
        Path link = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-777777-1.ring");
        files.add(link);
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, target);

        IOException opened = assertThrows(IOException.class, () -> SpscRing.open(link));
        assertTrue(String.valueOf(opened.getMessage()).contains(link.toString()), opened.toString());
        assertThrows(FileAlreadyExistsException.class, () -> SpscRing.create(link, 1 << 16));

        // The same link named in a handshake: the socket closes, the file stays as it was.
        Iface victim = iface();
        Path other = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-777777-2.ring");
        files.add(other);
        SpscRing.create(other, 1 << 16).close();
        try (SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX)) {
            ch.connect(UnixDomainSocketAddress.of(socketOf(victim)));
            ch.write(hello(ShmFiles.pid(), 777_777, link, other));
            assertTrue(closedWithin(ch, 10_000), "a handshake naming a link must be refused");
        }
        assertArrayEquals(content, Files.readAllBytes(target), "the link's target was written");
        assertTrue(Files.isSymbolicLink(link));
    }

    /** A ring file of another user is refused by name and owner; the iface's socket admits its own user only. */
    @Test
    void ringsAndSocketsOfAnotherUserAreRefused() throws Exception {
        Iface victim = iface();
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(socketOf(victim))));
        org.junit.jupiter.api.Assumptions.assumeTrue(SpscRing.ownUid() == 0, "chown to another user needs root");
        Path ring = ShmFiles.DIR.resolve("nucx-" + ShmFiles.pid() + "-666666-1.ring");
        files.add(ring);
        Files.deleteIfExists(ring);
        SpscRing.create(ring, 1 << 16).close();
        Files.setAttribute(ring, "unix:uid", 65534);
        IOException e = assertThrows(IOException.class, () -> SpscRing.open(ring));
        assertTrue(e.getMessage().contains("owned by uid 65534"), e.getMessage());
    }
}
