package io.nucx.examples.frameworks;

import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerServiceDefinition;
import io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import io.grpc.stub.StreamObserver;
import io.netty.channel.Channel;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.ServerChannel;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.function.UnaryOperator;

/**
 * A gRPC-java service on grpc-netty, with a unary method and a bidirectional-streaming one, both answering each
 * message with its SHA-256 (32 bytes) followed by the message. Messages are plain bytes (a byte-array marshaller,
 * no generated code). The transport is only what the builders get: {@code channelType} and the event loop groups.
 */
public final class GrpcApp {

    /** gRPC refuses larger messages unless told: 16 MiB each way. */
    public static final int MAX_MESSAGE = 16 << 20;

    static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    public static final MethodDescriptor<byte[], byte[]> UNARY = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName("nucx.Hash/Unary")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
    public static final MethodDescriptor<byte[], byte[]> CHAT = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING).setFullMethodName("nucx.Hash/Chat")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

    /** Answers each message with its length (4 bytes): the throughput benchmark's stream, without the hash. */
    public static final MethodDescriptor<byte[], byte[]> SIZE = MethodDescriptor.<byte[], byte[]>newBuilder()
            .setType(MethodDescriptor.MethodType.BIDI_STREAMING).setFullMethodName("nucx.Hash/Size")
            .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();

    private GrpcApp() {
    }

    /** SHA-256 of {@code m}, then {@code m}. */
    public static byte[] answer(byte[] m) {
        try {
            byte[] h = MessageDigest.getInstance("SHA-256").digest(m);
            byte[] out = Arrays.copyOf(h, h.length + m.length);
            System.arraycopy(m, 0, out, h.length, m.length);
            return out;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    public static Server server(EventLoopGroup boss, EventLoopGroup workers, Class<? extends ServerChannel> type,
                                InetSocketAddress at) throws IOException {
        ServerServiceDefinition service = ServerServiceDefinition.builder("nucx.Hash")
                .addMethod(UNARY, ServerCalls.asyncUnaryCall((req, out) -> {
                    out.onNext(answer(req));
                    out.onCompleted();
                }))
                .addMethod(SIZE, ServerCalls.asyncBidiStreamingCall(out -> relay(out, m -> ByteBuffer
                        .allocate(4).putInt(m.length).array())))
                .addMethod(CHAT, ServerCalls.asyncBidiStreamingCall(out -> relay(out, GrpcApp::answer))).build();
        return NettyServerBuilder.forAddress(at).channelType(type).bossEventLoopGroup(boss)
                .workerEventLoopGroup(workers).maxInboundMessageSize(MAX_MESSAGE).addService(service).build().start();
    }

    private static StreamObserver<byte[]> relay(StreamObserver<byte[]> out,
                                                UnaryOperator<byte[]> answer) {
        return new StreamObserver<>() {
            @Override
            public void onNext(byte[] m) {
                out.onNext(answer.apply(m));
            }

            @Override
            public void onError(Throwable t) {
                out.onError(t);
            }

            @Override
            public void onCompleted() {
                out.onCompleted();
            }
        };
    }

    public static ManagedChannel client(EventLoopGroup group, Class<? extends Channel> type, InetSocketAddress to) {
        return NettyChannelBuilder.forAddress(to).channelType(type).eventLoopGroup(group).usePlaintext()
                .maxInboundMessageSize(MAX_MESSAGE).build();
    }

    public static byte[] unary(ManagedChannel ch, byte[] request) {
        return ClientCalls.blockingUnaryCall(ch, UNARY, CallOptions.DEFAULT, request);
    }

    /** Opens a bidirectional stream; {@code answers} gets each answer. */
    public static StreamObserver<byte[]> chat(ManagedChannel ch, StreamObserver<byte[]> answers) {
        return ClientCalls.asyncBidiStreamingCall(ch.newCall(CHAT, CallOptions.DEFAULT), answers);
    }

    /** Opens a stream whose answers are the messages' lengths. */
    public static StreamObserver<byte[]> sizes(ManagedChannel ch, StreamObserver<byte[]> answers) {
        return ClientCalls.asyncBidiStreamingCall(ch.newCall(SIZE, CallOptions.DEFAULT), answers);
    }
}
