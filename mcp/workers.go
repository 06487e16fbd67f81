package mcp

import (
	"context"
	"sync"

	"airlock.dev/airlock/gate"
	"airlock.dev/airlock/tool"
)

// Gate calls run on a few long-lived goroutines rather than on the one the
// SDK starts for each request. A new goroutine starts with a small stack,
// and the gate's stages (schema validation, the policy, the executor, the
// audit record) grow it by copying, several times, on every call: measured
// in the tools/call round trip, 20–30 µs of a call's 40–70 µs in the
// gate. A worker's stack stays grown between calls. It parks under a frame
// of workerStackReserve bytes, because the garbage collector halves the
// stack of a goroutine that uses less than a quarter of it, and an idle
// worker would otherwise lose its stack at every collection.
//
// When every worker is busy the call runs in the caller's goroutine, as
// before: nothing waits for a worker, so a slow call (a command, a fetch)
// never delays another.
const (
	// gateWorkers is how many calls can run on a worker at once.
	gateWorkers = 8
	// workerStackReserve is the frame a worker parks under: enough that a
	// stack grown for the gate's stages (16 KiB) is not shrunk back.
	workerStackReserve = 6 << 10
)

// gateCall is one call handed to a worker, and its result.
type gateCall struct {
	ctx  context.Context
	g    *gate.Gate
	call tool.Call
	res  tool.Result
	done chan struct{} // one value when res is set; reused
}

var (
	startWorkers sync.Once
	gateCalls    = make(chan *gateCall) // unbuffered: taken only by an idle worker
	gateCallPool = sync.Pool{New: func() any { return &gateCall{done: make(chan struct{}, 1)} }}
)

// callGate runs g.Call on an idle worker, or here when none is idle.
func callGate(ctx context.Context, g *gate.Gate, c tool.Call) tool.Result {
	startWorkers.Do(func() {
		for range gateWorkers {
			go reserveStack(0)
		}
	})
	gc := gateCallPool.Get().(*gateCall)
	gc.ctx, gc.g, gc.call = ctx, g, c
	select {
	case gateCalls <- gc:
		<-gc.done
	default:
		gc.res = g.Call(ctx, c)
	}
	res := gc.res
	*gc = gateCall{done: gc.done} // hold on to nothing of this call
	gateCallPool.Put(gc)
	return res
}

// reserveStack runs a worker under a frame of workerStackReserve bytes.
// i is 0; it indexes the frame so that the compiler keeps it.
//
//go:noinline
func reserveStack(i int) byte {
	var reserve [workerStackReserve]byte
	reserve[i] = 1
	gateWorker()
	return reserve[i]
}

func gateWorker() {
	for gc := range gateCalls {
		gc.res = gc.g.Call(gc.ctx, gc.call)
		gc.done <- struct{}{}
	}
}
