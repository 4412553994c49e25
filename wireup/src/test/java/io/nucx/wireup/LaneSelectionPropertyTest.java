package io.nucx.wireup;

import io.nucx.ErrorMode;
import io.nucx.UnreachableException;
import io.nucx.WorkerAddress;
import io.nucx.transport.Capability;
import io.nucx.transport.Iface;
import io.nucx.transport.testing.RandomCases;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Both peers of an endpoint run lane selection on the same two addresses, each from its own side, and must arrive at
 * the same lanes ({@link LaneSelector}: "so that both peers ... choose the same lanes"). Over random pairs of workers
 * ({@link RandomCases}, 3000 cases): each offers a random subset of transports in a random order, with random
 * capabilities, AM limits, latencies, overheads, bandwidths and priorities (half of them from a few round values, so
 * that scores tie and the tie-breaks decide), on random devices and networks; an iface reaches a peer's iface on the
 * same network, and may be refused its memory (the same both ways). From either side: both find no AM lane, or the
 * same AM lane (the same pair of entries, the same score, p2p alike), the same AM_BW lanes in the same order, the same
 * RMA lane, and keepalive alike.
 */
class LaneSelectionPropertyTest {

    private static final int CASES = 3000;
    private static final List<String> TRANSPORTS = List.of("tcp", "self", "shm", "cma", "rdma", "ud");

    /** One worker: its ifaces and its address, entry i for iface i. */
    record Side(List<Iface> ifaces, WorkerAddress address) {
    }

    /** Two workers, an error mode, lane limits and which (transport, network) pairs refuse memory access. */
    record Pair(Side a, Side b, ErrorMode mode, LaneSelector.BwLimits limits, Set<String> refused) {
        static Pair draw(SplittableRandom r) {
            Set<String> refused = new HashSet<>();
            for (String t : TRANSPORTS) {
                for (int net = 0; net < 2; net++) {
                    if (r.nextInt(4) == 0) {
                        refused.add(t + "@" + net);
                    }
                }
            }
            ErrorMode mode = r.nextBoolean() ? ErrorMode.NONE : ErrorMode.PEER;
            double[] ratios = {1, 2, 10, 1000};
            LaneSelector.BwLimits limits = new LaneSelector.BwLimits(1 + r.nextInt(4), ratios[r.nextInt(4)]);
            return new Pair(side(r, 0xa, refused), side(r, 0xb, refused), mode, limits, Set.copyOf(refused));
        }

        @Override
        public String toString() {
            return "mode " + mode + ", " + limits + ", refused " + refused + "\n    a: " + describe(a) + "\n    b: "
                    + describe(b);
        }
    }

    private static Side side(SplittableRandom r, long uuid, Set<String> refused) {
        List<String> tls = new ArrayList<>(TRANSPORTS);
        for (int i = tls.size() - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            tls.set(i, tls.set(j, tls.get(i)));
        }
        tls = tls.subList(0, Math.max(1 + r.nextInt(tls.size()), 1 + r.nextInt(tls.size()))); // more often many
        List<Iface> ifaces = new ArrayList<>();
        List<WorkerAddress.Entry> entries = new ArrayList<>();
        String[] devices = {"lo", "eth0", "ib0", "memory"};
        for (String t : tls) {
            // device address: network, then which worker; reachable within a network, refused as the case says
            byte network = (byte) (r.nextInt(8) == 0 ? 1 : 0);
            byte[] dev = {network, (byte) uuid};
            Iface iface = new FakeIface(t, devices[r.nextInt(devices.length)], dev, remote -> remote[0] == network,
                    remote -> refused.contains(t + "@" + remote[0]));
            ifaces.add(iface);
            Set<Capability> caps = EnumSet.of(Capability.AM_SHORT);
            maybe(r, caps, Capability.AM_BCOPY, 0.9);
            maybe(r, caps, Capability.CONNECT_TO_IFACE, 0.85);
            maybe(r, caps, Capability.CONNECT_TO_EP, 0.3);
            maybe(r, caps, Capability.ERRHANDLE_PEER_FAILURE, 0.8);
            maybe(r, caps, Capability.GET_ZCOPY, 0.6);
            maybe(r, caps, Capability.PUT_ZCOPY, 0.3);
            maybe(r, caps, Capability.ATOMIC64, 0.2);
            int maxBcopy = r.nextInt(12) == 0 ? r.nextInt(LaneSelector.MIN_AM_BCOPY) : pick(r, new int[] {8192, 65536},
                    LaneSelector.MIN_AM_BCOPY + r.nextInt(1 << 17));
            entries.add(new WorkerAddress.Entry(t, caps, r.nextInt(8193), maxBcopy,
                    (float) pick(r, new double[] {0, 1e-7, 1e-6, 5e-6}, Math.pow(10, -9 + 5 * r.nextDouble())),
                    (float) pick(r, new double[] {0, 1e-8, 1e-7, 1e-6}, Math.pow(10, -10 + 5 * r.nextDouble())),
                    (float) pick(r, new double[] {1e9, 2.5e9, 1e10}, Math.pow(10, 7 + 4 * r.nextDouble())),
                    r.nextInt(3), iface.deviceAddress(), new byte[] {(byte) uuid}));
        }
        return new Side(ifaces, new WorkerAddress(uuid, uuid == 0xa ? "a" : "b", entries));
    }

    private static void maybe(SplittableRandom r, Set<Capability> caps, Capability c, double p) {
        if (r.nextDouble() < p) {
            caps.add(c);
        }
    }

    /** Half the time one of a few round values, so that scores tie; otherwise {@code any}. */
    private static double pick(SplittableRandom r, double[] round, double any) {
        return r.nextBoolean() ? round[r.nextInt(round.length)] : any;
    }

    private static int pick(SplittableRandom r, int[] round, int any) {
        return r.nextBoolean() ? round[r.nextInt(round.length)] : any;
    }

    private static String describe(Side s) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < s.ifaces().size(); i++) {
            WorkerAddress.Entry e = s.address().entries().get(i);
            out.add(String.format(Locale.ROOT, "%s/%s net %d %s short %d bcopy %d lat %s ovh %s bw %s prio %d",
                    e.transport(), s.ifaces().get(i).device().name(), e.deviceAddress()[0], e.capabilities(),
                    e.maxShort(), e.maxBcopy(), e.latency(), e.overhead(), e.bandwidth(), e.priority()));
        }
        return String.join("\n       ", out);
    }

    /** Selection from one side: its lanes, or why there are none. */
    private record Outcome(LaneSelector.Lanes lanes, String unreachable) {
        static Outcome of(Side local, Side remote, Pair p) {
            try {
                return new Outcome(LaneSelector.selectLanes(local.ifaces(), local.address(), remote.address(),
                        p.mode(), p.limits(), null), null);
            } catch (UnreachableException e) {
                return new Outcome(null, e.getMessage());
            }
        }

        @Override
        public String toString() {
            return lanes != null ? lanes.describe() + " (AM score " + lanes.am().score() + ")"
                    : "unreachable: " + unreachable;
        }
    }

    @Test
    void bothPeersChooseTheSameLanes() {
        long[] reached = new long[4]; // cases with an AM lane, with AM_BW lanes, with an RMA lane; cases
        RandomCases.forAll("lanes agree from both sides", CASES, Pair::draw, p -> {
            reached[3]++;
            Outcome fromA = Outcome.of(p.a(), p.b(), p);
            Outcome fromB = Outcome.of(p.b(), p.a(), p);
            String both = "\n    from a: " + fromA + "\n    from b: " + fromB;
            assertEquals(fromA.lanes() == null, fromB.lanes() == null, () -> "one side found an AM lane" + both);
            if (fromA.lanes() == null) {
                return;
            }
            LaneSelector.Lanes la = fromA.lanes();
            LaneSelector.Lanes lb = fromB.lanes();
            reached[0]++;
            assertSame(la.am().local(), lb.am().remote(), () -> "AM lane" + both);
            assertSame(la.am().remote(), lb.am().local(), () -> "AM lane" + both);
            assertEquals(la.am().score(), lb.am().score(), () -> "AM score" + both);
            assertEquals(la.am().p2p(), lb.am().p2p(), () -> "p2p" + both);
            assertEquals(la.bw().size(), lb.bw().size(), () -> "AM_BW lanes" + both);
            for (int i = 0; i < la.bw().size(); i++) {
                int k = i;
                assertSame(la.bw().get(i).local(), lb.bw().get(i).remote(), () -> "AM_BW lane " + k + both);
                assertSame(la.bw().get(i).remote(), lb.bw().get(i).local(), () -> "AM_BW lane " + k + both);
            }
            reached[1] += la.bw().isEmpty() ? 0 : 1;
            assertEquals(la.rma() == null, lb.rma() == null, () -> "RMA lane on one side only" + both);
            if (la.rma() != null) {
                reached[2]++;
                assertSame(la.rma().local(), lb.rma().remote(), () -> "RMA lane" + both);
                assertSame(la.rma().remote(), lb.rma().local(), () -> "RMA lane" + both);
            }
            assertEquals(la.keepalive() == null, lb.keepalive() == null, () -> "keepalive" + both);
            assertTrue(la.keepalive() == null || la.keepalive() == la.am(), () -> "keepalive off the AM lane" + both);
        });
        // The generator must reach every lane role often, or the agreement proves little.
        String reach = Arrays.stream(reached).mapToObj(Long::toString).collect(Collectors.joining(", "));
        assertTrue(reached[0] > reached[3] / 4 && reached[1] > reached[3] / 20 && reached[2] > reached[3] / 20,
                () -> "cases with AM, AM_BW, RMA lanes, of all: " + reach);
    }
}
