package io.nucx.examples;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.concurrent.ExecutionException;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** What {@code bin/nucx} prints when a command fails. */
class NucxMainTest {

    @Test
    void aFailureIsItsRootCausesMessage() {
        assertEquals("endpoint #0 failed",
                NucxMain.describe(new ExecutionException(new IOException("endpoint #0 failed"))));
    }

    @Test
    void failuresSuppressedOnTheWayAreNamedToo() {
        // An in-process perftest: the client sees its connection go; the server's own failure closed it.
        IOException client = new IOException("endpoint #0 to perftest-server failed");
        client.addSuppressed(new IllegalStateException("unexpected perftest tag 7"));
        ExecutionException thrown = new ExecutionException(client);
        thrown.addSuppressed(new IOException("server timed out"));
        assertEquals("endpoint #0 to perftest-server failed; and: server timed out; and: unexpected perftest tag 7",
                NucxMain.describe(thrown));
    }
}
