package io.nucx.examples.soak;

import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFuture;
import io.nucx.Endpoint;
import io.nucx.NucxBootstrap;
import io.nucx.Worker;
import io.nucx.WorkerAddress;
import io.nucx.protocol.amo.AtomicOp;
import io.nucx.protocol.amo.RemoteMemoryKey;
import io.nucx.transport.diag.LeakLog;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One peer process of {@link SoakCommand}: {@code SoakPeer HUB_ADDRESS KEY PEER_ID ENDPOINTS}. It keeps ENDPOINTS
 * endpoints to the hub and sends on them without pause, a window of sends in flight: mixed sizes (eager short, bcopy,
 * multi-fragment, rendezvous), one in ten synchronous, an atomic now and then on the hub's region; every so often it
 * closes an endpoint and opens a new one. On {@code stop} (standard input) it stops sending, waits for every send,
 * closes its endpoints gracefully (what was written goes first) and prints {@code FINAL <messages> <bytes> <leaks>}:
 * a peer runs Netty's leak detector at PARANOID too, and counts its leak reports after its worker has closed.
 */
public final class SoakPeer {

    private static final int WINDOW = 32;

    public static void main(String[] args) throws Exception {
        LeakLog.install();
        WorkerAddress hub = WorkerAddress.fromHex(args[0]);
        RemoteMemoryKey key = RemoteMemoryKey.fromHex(args[1]);
        int peer = Integer.parseInt(args[2]);
        int endpoints = Integer.parseInt(args[3]);
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                for (String l; (l = in.readLine()) != null; ) {
                    if (l.trim().equals("stop")) {
                        break;
                    }
                }
            } catch (Exception ignored) {
                // the hub went: stop too
            }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Worker worker = new NucxBootstrap().name("soak-peer-" + peer).start();
        SplittableRandom random = new SplittableRandom(peer);
        List<Endpoint> eps = new ArrayList<>();
        int[] epIds = new int[endpoints];
        int nextEpId = 0;
        for (int i = 0; i < endpoints; i++) {
            eps.add(worker.connect(hub));
            epIds[i] = nextEpId++;
        }
        long sequence = 1;
        long messages = 0;
        long bytes = 0;
        ArrayDeque<ChannelFuture> inFlight = new ArrayDeque<>();
        System.out.println("READY " + peer);
        System.out.flush();
        while (!stop.get()) {
            int i = random.nextInt(eps.size());
            if (random.nextInt(2000) == 0) { // churn: this endpoint goes (gracefully), a new one takes its place
                eps.get(i).close();
                eps.set(i, worker.connect(hub));
                epIds[i] = nextEpId++;
            }
            Endpoint ep = eps.get(i);
            if (random.nextInt(200) == 0) {
                ep.atomic(AtomicOp.ADD, key, key.base(), 1);
            }
            long tag = SoakPayload.tag(peer, epIds[i], sequence++);
            byte[] b = SoakPayload.bytes(tag);
            ChannelFuture f = sequence % 10 == 0 ? ep.tagSendSync(tag, Unpooled.wrappedBuffer(b))
                    : ep.tagSend(tag, Unpooled.wrappedBuffer(b));
            inFlight.add(f);
            messages++;
            bytes += b.length;
            while (inFlight.size() > WINDOW) {
                ChannelFuture done = inFlight.poll();
                if (!done.await(60, TimeUnit.SECONDS) || !done.isSuccess()) {
                    System.out.println("FAILED send: " + done.cause());
                    System.exit(2);
                }
            }
        }
        for (ChannelFuture f : inFlight) {
            if (!f.await(60, TimeUnit.SECONDS) || !f.isSuccess()) {
                System.out.println("FAILED send: " + f.cause());
                System.exit(2);
            }
        }
        for (Endpoint ep : eps) {
            ep.close().await(30, TimeUnit.SECONDS);
        }
        worker.close().get(30, TimeUnit.SECONDS);
        System.out.println("FINAL " + messages + " " + bytes + " " + LeakLog.reported().size());
        System.out.flush();
        System.exit(0);
    }
}
