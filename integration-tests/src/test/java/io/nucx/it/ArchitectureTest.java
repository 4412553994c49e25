package io.nucx.it;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.stream.Stream;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.Architectures.layeredArchitecture;

/**
 * nucx's layer rules (../shared/DESIGN.md), stated once and checked against the compiled main classes of every
 * module: dependencies point down only (tools → wireup and API → protocol → transport); nothing in transport knows
 * endpoints or protocols; nothing in protocol knows how lanes were chosen nor any concrete transport (it reaches RMA
 * lanes through the {@code io.nucx.transport.rma} SPI).
 */
class ArchitectureTest {

    private static JavaClasses nucx;

    @BeforeAll
    static void importMainClasses() {
        // Main classes only: the modules' target/classes or jars, not test classes nor the transport's test-jar.
        nucx = new ClassFileImporter().withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(location -> !location.contains("-tests.jar"))
                .importPackages("io.nucx");
    }

    @Test
    void dependenciesPointDownOnly() {
        layeredArchitecture().consideringOnlyDependenciesInLayers()
                .layer("Tools").definedBy("io.nucx.examples..")
                .layer("Wireup").definedBy("io.nucx", "io.nucx.wireup..")
                .layer("Protocol").definedBy("io.nucx.protocol..")
                .layer("Transport").definedBy("io.nucx.transport..")
                .whereLayer("Tools").mayNotBeAccessedByAnyLayer()
                .whereLayer("Wireup").mayOnlyBeAccessedByLayers("Tools")
                .whereLayer("Protocol").mayOnlyBeAccessedByLayers("Wireup", "Tools")
                .whereLayer("Transport").mayOnlyBeAccessedByLayers("Protocol", "Wireup", "Tools")
                .check(nucx);
    }

    @Test
    void protocolsKnowNoConcreteTransport() {
        noClasses().that().resideInAPackage("io.nucx.protocol..")
                .should().dependOnClassesThat().resideInAnyPackage("io.nucx.transport.tcp..",
                        "io.nucx.transport.shm..", "io.nucx.transport.self..", "io.nucx.transport.cma..",
                        "io.nucx.transport.rdma..")
                .because("protocols reach RMA lanes through io.nucx.transport.rma, and frames through AmFrame")
                .check(nucx);
    }

    /**
     * Every transport package stands alone: what two share (the socket engines, the polled-handle hook, the RMA lane
     * SPI) lives in {@code io.nucx.transport} or {@code io.nucx.transport.rma}.
     */
    @Test
    void transportsDoNotKnowEachOther() {
        for (String t : new String[] {"tcp", "shm", "self", "cma", "rdma"}) {
            noClasses().that().resideInAPackage("io.nucx.transport." + t + "..")
                    .should().dependOnClassesThat().resideInAnyPackage(
                            Stream.of("tcp", "shm", "self", "cma", "rdma")
                                    .filter(o -> !o.equals(t)).map(o -> "io.nucx.transport." + o + "..")
                                    .toArray(String[]::new))
                    .check(nucx);
        }
    }
}
