package blitzio_test

import (
	"context"
	"fmt"
	"time"

	"github.com/blitzgo/blitz/blitzio"
)

// A graceful stop: requests hold a WorkGuard while they run; once the shutdown is
// triggered (here by code; a server calls TriggerOn(blitzio.SignalInterrupt,
// blitzio.SignalTerminate)), new requests are refused, Wait lets the ones in flight finish
// and then runs the hooks, the runtime's Shutdown last.
func ExampleShutdown() {
	rt, _ := blitzio.New(blitzio.Config{Workers: 2})
	stop := blitzio.NewShutdown()
	stop.OnShutdown(rt.Shutdown)

	serve := func(id int) {
		g, err := stop.Guard()
		if err != nil {
			fmt.Printf("request %d refused: %v\n", id, err)
			return
		}
		blitzio.Spawn(rt, blitzio.Map(blitzio.Sleep(10*time.Millisecond), func(struct{}) struct{} {
			defer g.Release()
			fmt.Printf("request %d done\n", id)
			return struct{}{}
		}))
	}
	serve(1)
	stop.Trigger()
	serve(2)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", stop.Wait(ctx))
	// Output:
	// request 2 refused: blitzio: shutting down
	// request 1 done
	// shutdown: <nil>
}
