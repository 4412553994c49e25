package io.nucx.wireup;

import io.netty.buffer.UnpooledByteBufAllocator;
import io.netty.util.concurrent.Future;
import io.nucx.Endpoint;
import io.nucx.ErrorMode;
import io.nucx.Worker;
import io.nucx.protocol.AmIds;
import io.nucx.protocol.tag.EagerHeaders;
import io.nucx.protocol.tag.TagMessage;
import io.nucx.transport.AmFrame;
import io.nucx.transport.NucxConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.nucx.wireup.HostilePeerTest.await;
import static io.nucx.wireup.HostilePeerTest.exchange;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Authenticated wireup (NUCX_AUTH_TOKEN): peers with the key wire up as before; a REQUEST with a wrong key, none, or
 * replayed is refused before any endpoint exists, and a raw socket without the key delivers nothing.
 */
@Timeout(60)
class HostileAuthTest {

    @RegisterExtension
    final TestWorkers workers = new TestWorkers();

    private static final String KEY = "correct horse battery staple";

    private static void awaitRefusal(DefaultWorker target, String why) throws InterruptedException {
        await(() -> target.laneFailures().stream().anyMatch(t -> String.valueOf(t.getMessage()).contains(why)),
                "no refusal saying '" + why + "': " + target.laneFailures());
    }

    @Test
    void peersWithTheKeyWireUpOthersAreRefusedBeforeAnEndpointExists() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp", "AUTH_TOKEN", KEY);
        DefaultWorker friend = workers.start("friend", "TLS", "tcp", "AUTH_TOKEN", KEY);
        Endpoint ok = friend.connect(target.address());
        exchange(target, ok, 1);
        assertEquals(1, target.endpoints().size());

        DefaultWorker wrong = workers.start("wrong", "TLS", "tcp", "AUTH_TOKEN", "another key, long enough");
        Endpoint refused = wrong.connect(target.address());
        refused.tagSend(2, TestWorkers.pattern(2, 10));
        assertTrue(refused.errorFuture().await(20, TimeUnit.SECONDS) && !refused.errorFuture().isSuccess(),
                "a peer with another key must not wire up");
        awaitRefusal(target, "its proof does not match");

        DefaultWorker none = workers.start("none", "TLS", "tcp");
        Endpoint bare = none.connect(target.address());
        assertTrue(bare.errorFuture().await(20, TimeUnit.SECONDS) && !bare.errorFuture().isSuccess(),
                "a peer without a key must not wire up");
        awaitRefusal(target, "carries no proof");

        assertEquals(1, target.endpoints().size(), "refused REQUESTs made endpoints: " + target.endpoints());
        exchange(target, ok, 3);
    }

    @Test
    void aReplayedRequestIsRefused() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp", "AUTH_TOKEN", KEY);
        DefaultWorker shape = workers.start("shape", "TLS", "tcp");
        WireupAuth auth = WireupAuth.from(NucxConfig.of(Map.of("AUTH_TOKEN", KEY), Map.of()));
        long uuid = 0x1234_5678L;
        byte[] proof = auth.proof(uuid, target.uuid(), 0);
        AmFrame recorded = RawPeer.requestFrame(uuid, 0, shape.address(), ErrorMode.PEER, proof);
        byte[] header = RawPeer.bytes(recorded.header());
        byte[] payload = RawPeer.bytes(recorded.payload());
        recorded.release();
        try (RawPeer first = RawPeer.connect(target)) {
            first.frame(AmIds.WIREUP, header, payload).flush();
            first.awaitFrame(AmIds.WIREUP); // the REPLY: the genuine REQUEST is accepted
        }
        await(() -> target.endpoints().isEmpty(), "the first connection's endpoint outlived it");
        try (RawPeer replay = RawPeer.connect(target)) {
            replay.frame(AmIds.WIREUP, header, payload).flush();
            assertTrue(replay.closedByPeerWithin(10_000), "a replayed REQUEST must be refused");
        }
        awaitRefusal(target, "replays a message already received");
        assertTrue(target.endpoints().isEmpty());

        // Recorded on its way to one worker, it proves nothing to another with the same key.
        DefaultWorker other = workers.start("other", "TLS", "tcp", "AUTH_TOKEN", KEY);
        try (RawPeer elsewhere = RawPeer.connect(other)) {
            elsewhere.frame(AmIds.WIREUP, header, payload).flush();
            assertTrue(elsewhere.closedByPeerWithin(10_000));
        }
        awaitRefusal(other, "its proof does not match");
    }

    /** The last row: a raw socket with no credentials got an endpoint and fed the posted receives. */
    @Test
    void aRawSocketWithoutTheKeyDeliversNothing() throws Exception {
        DefaultWorker target = workers.start("target", "TLS", "tcp", "AUTH_TOKEN", KEY);
        DefaultWorker friend = workers.start("friend", "TLS", "tcp", "AUTH_TOKEN", KEY);
        Future<TagMessage> posted = target.tagRecv(0x77, -1L);
        try (RawPeer raw = RawPeer.connect(target)) {
            raw.request(raw.uuid, 0, friend.address(), ErrorMode.PEER);
            raw.frame(AmIds.EAGER_ONLY, RawPeer.le(EagerHeaders.ONLY_LENGTH).putLong(0x77).array(), new byte[7]);
            raw.flush();
            assertTrue(raw.closedByPeerWithin(10_000), "the raw socket's REQUEST must be refused");
        }
        assertTrue(target.endpoints().isEmpty());
        assertFalse(posted.isDone(), "the raw socket's message reached the posted receive");
        Endpoint ok = friend.connect(target.address());
        ok.tagSend(0x77, TestWorkers.pattern(0x77, 100)).sync();
        TagMessage m = posted.get(10, TimeUnit.SECONDS);
        try {
            TestWorkers.assertPattern(0x77, 100, m.content()); // the friend's, not the raw socket's 7 bytes
        } finally {
            m.release();
        }
    }

    @Test
    void aShortKeyOrTwoKeysStopStartNamingTheSetting() {
        Exception shortKey = assertThrows(Exception.class, () -> workers.start("w", "AUTH_TOKEN", "short"));
        assertTrue(shortKey.getMessage().contains("NUCX_AUTH_TOKEN") || shortKey.getMessage().contains("AUTH_TOKEN"),
                shortKey.getMessage());
        Exception both = assertThrows(Exception.class, () -> workers.start("w", "AUTH_TOKEN", KEY, "AUTH_KEY_FILE",
                "/etc/hostname"));
        assertTrue(both.getMessage().contains("not both"), both.getMessage());
        assertTrue(List.of(shortKey, both).stream().noneMatch(e -> e.getMessage().contains(KEY)
                        || e.getMessage().contains("'short'")), "the key must not appear in messages");
    }

    /** AM_BW lanes join with a proof; a stranger's LANE_ATTACH naming a real endpoint is refused and joins nothing. */
    @Test
    void lanesJoinOnlyWithAProof() throws Exception {
        String[] settings = {"TLS", "shm,tcp", "MULTI_LANE_MAX_RATIO", "20", "AUTH_TOKEN", KEY};
        DefaultWorker a = workers.start("a", settings);
        DefaultWorker b = workers.start("b", settings);
        Endpoint ab = a.connect(b.address());
        exchange(b, ab, 1);
        await(() -> {
            try {
                return ab.laneNames().get().size() == 2;
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, "the AM_BW lane did not join with its proof");
        Endpoint ba = b.endpoints().iterator().next();
        long target = TestWorkers.impl(ba).endpointId();
        long peerEp = ab.eventLoop().submit(() -> TestWorkers.impl(ab).endpointId()).get();
        try (RawPeer raw = RawPeer.connect(b)) {
            raw.frame(WireupMessage.laneAttach(peerEp, target, 2, a.uuid(), "tcp")
                    .toFrame(UnpooledByteBufAllocator.DEFAULT)).flush();
            assertTrue(raw.closedByPeerWithin(10_000), "a LANE_ATTACH without proof must be refused");
        }
        awaitRefusal(b, "LANE_ATTACH from " + Long.toHexString(a.uuid()) + " refused");
        assertEquals(2, b.eventLoop().submit(() -> TestWorkers.impl(ba).lanes().size()).get().intValue(),
                "the stranger's lane joined the endpoint");
        exchange(b, ab, 2);
    }
}
