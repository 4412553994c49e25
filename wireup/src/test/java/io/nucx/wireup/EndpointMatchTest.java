package io.nucx.wireup;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The (uuid, conn_sn) queues alone, with plain objects standing for endpoints. */
class EndpointMatchTest {

    @Test
    void connectionNumbersCountPerPeerAndWrapAtSixteenBits() {
        EndpointMatch<Object> m = new EndpointMatch<>();
        assertEquals(0, m.nextConnSn(7));
        assertEquals(1, m.nextConnSn(7));
        assertEquals(0, m.nextConnSn(8), "another peer has its own sequence");
        assertEquals(2, m.nextConnSn(7));
        for (int i = 3; i < 0x10000; i++) {
            m.nextConnSn(7);
        }
        assertEquals(0, m.nextConnSn(7), "conn_sn is u16 on the wire");
    }

    @Test
    void expectedAndUnexpectedAreKeptApartByUuidAndNumber() {
        EndpointMatch<Object> m = new EndpointMatch<>();
        Object e1 = new Object();
        Object e2 = new Object();
        m.addExpected(7, 0, e1);
        m.addUnexpected(7, 1, e2);
        assertEquals(e1, m.expected(7, 0));
        assertNull(m.expected(7, 1), "an unexpected endpoint is not expected");
        assertNull(m.expected(8, 0), "another peer's number 0 is another connection");
        assertNull(m.takeUnexpected(7, 0), "an expected endpoint is not adopted by connect");
        assertArrayEquals(new int[] {1, 1}, m.sizes(7));
        assertEquals(e2, m.takeUnexpected(7, 1));
        assertNull(m.takeUnexpected(7, 1), "adopted once");
        m.remove(7, 0, e2);
        assertEquals(e1, m.expected(7, 0), "remove takes only the endpoint given");
        m.remove(7, 0, e1);
        assertArrayEquals(new int[] {0, 0}, m.sizes(7));
    }

    @Test
    void aNumberIsQueuedOnceAtATime() {
        EndpointMatch<Object> m = new EndpointMatch<>();
        m.addExpected(7, 0, new Object());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> m.addExpected(7, 0, new Object()));
        assertEquals(true, e.getMessage().contains("connection #0 is already expected"), e.getMessage());
    }

}
