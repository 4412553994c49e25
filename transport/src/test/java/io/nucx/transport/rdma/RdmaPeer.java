package io.nucx.transport.rdma;

import io.netty.buffer.ByteBufUtil;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.nucx.transport.AmFrame;
import io.nucx.transport.P2pEndpoint;
import io.nucx.transport.rma.MemoryRegistration;
import io.nucx.transport.testing.LeakRecorder;
import io.nucx.transport.testsuite.Patterns;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The other process of {@link RdmaTwoProcessTest}: one rdma lane per emulated device named in {@code args[1]}
 * (comma-separated), over the verbs library {@code args[0]}, and a native region of {@code args[2]} bytes filled
 * with {@link Patterns} seed 1 and registered on every lane. Line protocol on stdin/stdout:
 * <pre>
 *   -> ADDR i deviceHex endpointHex      (one per lane)
 *   <- PEER i deviceHex endpointHex      (one per lane)
 *   -> KEY i keyHex                      (one per lane), then READY
 *   SINK i        the lane stops echoing: it counts frames and checks their sequence and bytes   -> OK
 *   PAUSE i / RESUME i   autoRead off / on                                                        -> OK
 *   COUNT i       -> COUNT frames errors
 *   CHECK offset length seed -> OK | BAD offset        FILL offset length seed -> OK
 *   WORD offset   -> WORD value            COUNTERS -> COUNTERS c0 c1 ... (the emulator's)
 *   EXIT
 * </pre>
 * By default each lane echoes every frame it receives.
 */
public final class RdmaPeer {

    private static final HexFormat HEX = HexFormat.of();

    /** Echoes frames, or (sink) counts them and checks each one's sequence number and payload. */
    static final class Lane extends ChannelInboundHandlerAdapter {
        volatile boolean sink;
        volatile long frames;
        volatile long errors;

        @Override
        public void channelRead(ChannelHandlerContext ctx, Object msg) {
            AmFrame f = (AmFrame) msg;
            if (!sink) {
                ctx.writeAndFlush(f);
                return;
            }
            try {
                int seq = f.header().getInt(f.header().readerIndex());
                byte[] payload = ByteBufUtil.getBytes(f.payload());
                boolean ok = seq == frames;
                for (int i = 0; i < payload.length && ok; i++) {
                    ok = payload[i] == (byte) (seq * 31 + i);
                }
                if (!ok) {
                    errors++;
                }
                frames++;
            } finally {
                f.release();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        LeakRecorder.install();
        String library = args[0];
        String[] devices = args[1].split(",");
        long size = Long.parseLong(args[2]);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        List<RdmaNode> nodes = new ArrayList<>();
        List<Lane> handlers = new ArrayList<>();
        List<P2pEndpoint> endpoints = new ArrayList<>();
        List<Channel> channels = new ArrayList<>();
        try (Arena arena = Arena.ofShared()) {
            MemorySegment region = arena.allocate(size, 4096);
            Patterns.fill(region, 0, 1);
            for (int i = 0; i < devices.length; i++) {
                RdmaNode node = RdmaNode.open(library, devices[i], false, Map.of());
                nodes.add(node);
                Lane h = new Lane();
                handlers.add(h);
                P2pEndpoint ep = node.endpoint(h);
                endpoints.add(ep);
                System.out.println("ADDR " + i + " " + node.address(ep));
            }
            for (int i = 0; i < devices.length; i++) {
                String[] w = in.readLine().split(" ", 3);
                channels.add(nodes.get(Integer.parseInt(w[1])).connect(endpoints.get(Integer.parseInt(w[1])), w[2]));
            }
            List<MemoryRegistration> keys = new ArrayList<>();
            for (int i = 0; i < devices.length; i++) {
                RdmaChannel ch = (RdmaChannel) channels.get(i);
                MemoryRegistration r = nodes.get(i).loop.submit(() -> ch.register(region)).get();
                keys.add(r);
                System.out.println("KEY " + i + " " + HEX.formatHex(r.packedKey()));
            }
            System.out.println("READY");
            for (String line; (line = in.readLine()) != null; ) {
                String[] w = line.split(" ");
                switch (w[0]) {
                    case "SINK" -> {
                        handlers.get(Integer.parseInt(w[1])).sink = true;
                        System.out.println("OK");
                    }
                    case "PAUSE", "RESUME" -> {
                        Channel ch = channels.get(Integer.parseInt(w[1]));
                        ch.eventLoop().submit(() -> ch.config().setAutoRead(w[0].equals("RESUME"))).get();
                        System.out.println("OK");
                    }
                    case "COUNT" -> {
                        Lane h = handlers.get(Integer.parseInt(w[1]));
                        System.out.println("COUNT " + h.frames + " " + h.errors);
                    }
                    case "CHECK" -> {
                        long off = Long.parseLong(w[1]);
                        long mismatch = Patterns.firstMismatch(region.asSlice(off, Long.parseLong(w[2])), off,
                                Integer.parseInt(w[3]));
                        System.out.println(mismatch < 0 ? "OK" : "BAD " + mismatch);
                    }
                    case "FILL" -> {
                        long off = Long.parseLong(w[1]);
                        Patterns.fill(region.asSlice(off, Long.parseLong(w[2])), off, Integer.parseInt(w[3]));
                        System.out.println("OK");
                    }
                    case "WORD" -> System.out.println("WORD " + region.get(ValueLayout.JAVA_LONG_UNALIGNED,
                            Long.parseLong(w[1])));
                    case "COUNTERS" -> System.out.println("COUNTERS " + (!library.equals(VerbsEmulator.library())
                            ? "" : String.join(" ", Arrays.stream(VerbsEmulator.counters())
                            .mapToObj(Long::toString).toList())));
                    case "EXIT" -> {
                        for (int i = 0; i < channels.size(); i++) {
                            MemoryRegistration r = keys.get(i);
                            nodes.get(i).loop.submit(r::close).get();
                            channels.get(i).close().sync();
                        }
                        for (RdmaNode n : nodes) {
                            n.close();
                        }
                        System.out.println("BYE");
                        System.exit(LeakRecorder.collect().isEmpty() ? 0 : 3);
                    }
                    default -> System.out.println("ERR unknown command " + line);
                }
            }
        }
    }
}
