// Command lockpath measures the path of (*Mutex).Lock through the root
// package: the functions that can run before its first call into a
// driver.Driver, over every branch, and the files they span. With -all it
// counts every function Lock can reach, on this goroutine, to the end.
//
//	cd .ci/lockpath && GOWORK=off go run . [-all] [-list] ../..
//
// The call graph is VTA's, which merges what flows into one function
// parameter: a function value that RWMutex or Semaphore passes where Mutex
// passes its own counts as reachable from Mutex too.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/tools/go/callgraph"
	"golang.org/x/tools/go/callgraph/cha"
	"golang.org/x/tools/go/callgraph/vta"
	"golang.org/x/tools/go/packages"
	"golang.org/x/tools/go/ssa"
	"golang.org/x/tools/go/ssa/ssautil"
)

const root = "github.com/uncomplicated-mutex/uncomplicated"

func main() {
	all := flag.Bool("all", false, "count every function Lock reaches, not only those before the first driver call")
	list := flag.Bool("list", false, "list the functions")
	flag.Parse()
	pkgs, err := packages.Load(&packages.Config{Mode: packages.LoadAllSyntax, Dir: flag.Arg(0)}, ".")
	if err != nil || packages.PrintErrors(pkgs) > 0 {
		os.Exit(1)
	}
	prog, _ := ssautil.AllPackages(pkgs, ssa.InstantiateGenerics)
	prog.Build()
	funcs := ssautil.AllFunctions(prog)
	cg := vta.CallGraph(funcs, cha.CallGraph(prog))
	cg.DeleteSyntheticNodes()
	var lock *ssa.Function
	for f := range funcs {
		if r := f.Signature.Recv(); r != nil && f.Name() == "Lock" && r.Type().String() == "*"+root+".Mutex" {
			lock = f
		}
	}
	reach := reachable(cg, lock)
	if !*all {
		reach = beforeDriver(cg, lock, reach)
	}
	files := map[string][]string{}
	for f := range reach {
		pos := prog.Fset.Position(f.Pos())
		if !pos.IsValid() && f.Parent() != nil {
			pos = prog.Fset.Position(f.Parent().Pos())
		}
		name := filepath.Base(pos.Filename)
		files[name] = append(files[name], strings.ReplaceAll(f.String(), root+".", ""))
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	fmt.Printf("%d functions in %d files\n", len(reach), len(files))
	for _, name := range names {
		fmt.Printf("  %-20s %d\n", name, len(files[name]))
		if *list {
			sort.Strings(files[name])
			for _, f := range files[name] {
				fmt.Printf("      %s\n", f)
			}
		}
	}
}

// reachable returns the functions of the root package that from can reach
// on its own goroutine.
func reachable(cg *callgraph.Graph, from *ssa.Function) map[*ssa.Function]bool {
	seen := map[*ssa.Function]bool{}
	var walk func(n *callgraph.Node)
	walk = func(n *callgraph.Node) {
		if seen[n.Func] || n.Func.Pkg == nil || n.Func.Pkg.Pkg.Path() != root {
			return
		}
		seen[n.Func] = true
		for _, e := range n.Out {
			if _, isGo := e.Site.(*ssa.Go); !isGo {
				walk(e.Callee)
			}
		}
	}
	walk(cg.Nodes[from])
	return seen
}

// callsDriver reports whether call is a call of a driver.Driver method.
func callsDriver(call ssa.CallInstruction) bool {
	c := call.Common()
	return c.IsInvoke() && c.Value.Type().String() == root+"/driver.Driver"
}

// beforeDriver returns the functions of reach that can run before from's
// first call into a driver: along every branch of each function's CFG up
// to the first call on the way to a driver, the callees of every call
// passed, with all they reach, and at that first call its callee's own
// prefix.
func beforeDriver(cg *callgraph.Graph, from *ssa.Function, reach map[*ssa.Function]bool) map[*ssa.Function]bool {
	// onWay: the functions from which a driver call is reachable.
	onWay := map[*ssa.Function]bool{}
	var queue []*ssa.Function
	for f := range reach {
		for _, b := range f.Blocks {
			for _, in := range b.Instrs {
				if call, ok := in.(ssa.CallInstruction); ok && callsDriver(call) && !onWay[f] {
					onWay[f] = true
					queue = append(queue, f)
				}
			}
		}
	}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		for _, e := range cg.Nodes[f].In {
			if _, isGo := e.Site.(*ssa.Go); !isGo && reach[e.Caller.Func] && !onWay[e.Caller.Func] {
				onWay[e.Caller.Func] = true
				queue = append(queue, e.Caller.Func)
			}
		}
	}
	before := map[*ssa.Function]bool{}
	var closure func(f *ssa.Function)
	closure = func(f *ssa.Function) {
		if before[f] || !reach[f] {
			return
		}
		before[f] = true
		for _, e := range cg.Nodes[f].Out {
			if _, isGo := e.Site.(*ssa.Go); !isGo {
				closure(e.Callee.Func)
			}
		}
	}
	done := map[*ssa.Function]bool{}
	var prefix func(f *ssa.Function)
	prefix = func(f *ssa.Function) {
		if done[f] || len(f.Blocks) == 0 {
			return
		}
		done[f], before[f] = true, true
		seen := map[*ssa.BasicBlock]bool{}
		stack := []*ssa.BasicBlock{f.Blocks[0]}
		for len(stack) > 0 {
			b := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if seen[b] {
				continue
			}
			seen[b] = true
			stopped := false
			for _, in := range b.Instrs {
				call, ok := in.(ssa.CallInstruction)
				if _, isGo := in.(*ssa.Go); !ok || isGo {
					continue
				}
				var next []*ssa.Function
				for _, e := range cg.Nodes[f].Out {
					if e.Site == call && onWay[e.Callee.Func] {
						next = append(next, e.Callee.Func)
					}
				}
				if callsDriver(call) || len(next) > 0 {
					for _, g := range next {
						prefix(g)
					}
					stopped = true
					break
				}
				for _, e := range cg.Nodes[f].Out {
					if e.Site == call {
						closure(e.Callee.Func)
					}
				}
			}
			if !stopped {
				stack = append(stack, b.Succs...)
			}
		}
	}
	prefix(from)
	return before
}
