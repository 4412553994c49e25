package io.nucx.wireup;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.UnpooledByteBufAllocator;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.AmIds;
import io.nucx.transport.AmFrame;
import io.nucx.transport.tcp.TcpAddresses;

import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.ThreadLocalRandom;

/**
 * An attacker with nothing but a socket to a worker's tcp iface: it writes frames as the tcp lane lays them out
 * ({@code am id:u8, flags:u8, header length:u16, payload length:u32}, little-endian, then header and payload) and
 * forges wireup as it likes. Blocking I/O on the test's thread; nothing here is nucx's own sending code.
 */
final class RawPeer implements AutoCloseable {

    private static final UnpooledByteBufAllocator HEAP = new UnpooledByteBufAllocator(false, true);

    private final Socket socket;
    private final OutputStream out;
    private final DataInputStream in;
    final long uuid = ThreadLocalRandom.current().nextLong();

    private RawPeer(Socket socket) throws IOException {
        this.socket = socket;
        this.out = new BufferedOutputStream(socket.getOutputStream(), 1 << 16);
        this.in = new DataInputStream(socket.getInputStream());
    }

    /** Connects to {@code target}'s tcp iface. */
    static RawPeer connect(Worker target) throws IOException {
        Socket s = new Socket();
        s.connect(tcpIface(target.address()), 5000);
        s.setTcpNoDelay(true);
        return new RawPeer(s);
    }

    Socket socket() {
        return socket;
    }

    /** Writes one frame (buffered: {@link #flush} sends). */
    RawPeer frame(int amId, byte[] header, byte[] payload) throws IOException {
        ByteBuffer prefix = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).put((byte) amId).put((byte) 0)
                .putShort((short) header.length).putInt(payload.length);
        out.write(prefix.array());
        out.write(header);
        out.write(payload);
        return this;
    }

    /** Writes a frame nucx's own message classes built (e.g. a {@link WireupMessage}); releases it. */
    RawPeer frame(AmFrame f) throws IOException {
        try {
            return frame(f.amId(), bytes(f.header()), bytes(f.payload()));
        } finally {
            f.release();
        }
    }

    RawPeer flush() throws IOException {
        out.flush();
        return this;
    }

    /**
     * A wireup REQUEST as connection {@code connSn} from a worker of uuid {@code uuid}, whose address reuses
     * {@code like}'s entries (so the target finds a lane to it), asking for error mode {@code mode}.
     */
    RawPeer request(long uuid, int connSn, WorkerAddress like, ErrorMode mode) throws IOException {
        return frame(requestFrame(uuid, connSn, like, mode, null));
    }

    /** The frame of {@link #request}, carrying {@code proof} ({@link WireupAuth}) or none. */
    static AmFrame requestFrame(long uuid, int connSn, WorkerAddress like, ErrorMode mode, byte[] proof) {
        WorkerAddress forged = new WorkerAddress(uuid, "raw-" + Long.toHexString(uuid), like.entries());
        return WireupMessage.request(mode, false, connSn, 7, forged, null, proof).toFrame(HEAP);
    }

    /**
     * Reads the worker's answer to our REQUEST: true for a REPLY; false when it refused it, by EP_REMOVED (naming why,
     * before it closes the connection) or by closing at once.
     */
    boolean answered() throws IOException {
        byte[] prefix = new byte[8];
        try {
            in.readFully(prefix);
        } catch (EOFException e) {
            return false;
        }
        ByteBuffer p = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN);
        int amId = p.get() & 0xff;
        p.get();
        int header = p.getShort() & 0xffff;
        long payload = p.getInt() & 0xffffffffL;
        if (amId != AmIds.WIREUP || header == 0) {
            throw new IOException("expected a wireup answer, got AM id " + amId + " with a " + header + "-byte header");
        }
        int type = in.readUnsignedByte();
        in.skipNBytes(header - 1 + payload);
        return switch (type) {
            case WireupMessage.REPLY -> true;
            case WireupMessage.EP_REMOVED -> false;
            default -> throw new IOException("expected REPLY or EP_REMOVED, got wireup message type " + type);
        };
    }

    /** Reads frames until one with {@code amId}; returns its header. */
    byte[] awaitFrame(int amId) throws IOException {
        while (true) {
            byte[] prefix = new byte[8];
            in.readFully(prefix);
            ByteBuffer p = ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN);
            int id = p.get() & 0xff;
            p.get();
            byte[] header = new byte[p.getShort() & 0xffff];
            long payload = p.getInt() & 0xffffffffL;
            in.readFully(header);
            in.skipNBytes(payload);
            if (id == amId) {
                return header;
            }
        }
    }

    /** Whether the worker closed the connection within {@code millis} (reading and dropping what it sent). */
    boolean closedByPeerWithin(long millis) throws IOException {
        long deadline = System.currentTimeMillis() + millis;
        byte[] sink = new byte[1 << 16];
        while (true) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return false;
            }
            socket.setSoTimeout((int) Math.max(1, left));
            try {
                if (socket.getInputStream().read(sink) < 0) {
                    return true;
                }
            } catch (SocketTimeoutException e) {
                return false;
            } catch (SocketException reset) {
                return true;
            }
        }
    }

    /** Whether the worker sent nothing and kept the connection open for {@code millis}. */
    boolean silentFor(long millis) throws IOException {
        socket.setSoTimeout((int) millis);
        try {
            in.read();
            return false; // a byte, or the end
        } catch (SocketTimeoutException e) {
            return true;
        } catch (SocketException reset) {
            return false;
        }
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }

    static byte[] bytes(ByteBuf b) {
        byte[] a = new byte[b.readableBytes()];
        b.getBytes(b.readerIndex(), a);
        return a;
    }

    static ByteBuffer le(int size) {
        return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** An EP_CHECK naming endpoint {@code dst} of the target. */
    static AmFrame epCheck(long dst) {
        return WireupMessage.epCheck(ErrorMode.PEER, 1, dst).toFrame(HEAP);
    }

    static int wireup() {
        return AmIds.WIREUP;
    }

    static InetSocketAddress tcpIface(WorkerAddress a) {
        WorkerAddress.Entry e = a.entries().stream().filter(x -> x.transport().equals("tcp")).findFirst()
                .orElseThrow();
        return TcpAddresses.socketAddress(e.deviceAddress(), e.ifaceAddress());
    }
}
