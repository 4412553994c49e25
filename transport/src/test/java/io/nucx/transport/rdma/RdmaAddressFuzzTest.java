package io.nucx.transport.rdma;

import com.code_intelligence.jazzer.junit.FuzzTest;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Coverage-guided fuzzing (Jazzer) of the rdma endpoint address a peer sends in wireup (queue pair number, PSN, LID,
 * GID, MTU, credits, frame size): {@link RdmaEndpointAddress#unpack} may refuse it only with an
 * {@link IllegalArgumentException} naming what is wrong, and what it accepts packs back to an address that unpacks the
 * same. In the suite it runs its seed corpus ({@code RdmaAddressFuzzTestInputs/}); {@code bin/fuzz TARGET MINUTES}
 * fuzzes it for real.
 */
class RdmaAddressFuzzTest {

    @FuzzTest(maxDuration = "20s")
    void endpointAddress(byte[] packed) {
        RdmaEndpointAddress a;
        try {
            a = RdmaEndpointAddress.unpack(packed);
        } catch (IllegalArgumentException refused) {
            return;
        }
        assertEquals(a, RdmaEndpointAddress.unpack(a.pack()), "an accepted address does not survive pack/unpack");
    }
}
