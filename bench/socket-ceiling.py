# Loopback TCP ceiling for comparison: one process sends 4000 x 1 MiB, the other receives into a 1 MiB buffer.
# Prints MiB/s. Usage: python3 bench/socket-ceiling.py
import socket, threading, time, os, sys
N=4000; SZ=1<<20
srv=socket.socket(); srv.bind(('127.0.0.1',0)); srv.listen(1); port=srv.getsockname()[1]
pid=os.fork()
if pid==0:
    c=socket.create_connection(('127.0.0.1',port)); c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY,1)
    buf=b'x'*SZ
    for i in range(N): c.sendall(buf)
    c.close(); os._exit(0)
s,_=srv.accept(); buf=bytearray(SZ); mv=memoryview(buf); tot=0; t=time.time()
while True:
    n=s.recv_into(mv)
    if n==0: break
    tot+=n
dt=time.time()-t
print("%.0f MiB/s" % (tot/dt/2**20))
