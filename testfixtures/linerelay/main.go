// Command linerelay is the leanest process that can stand between a client
// and a stdio server: it starts the command in its arguments and passes
// each line the client writes on its stdin to the command's stdin, and each
// line of the command's stdout to its own stdout, reading nothing else. It
// is the floor of a process in the middle in BenchmarkCall (e2e): what one
// more process hop costs on the machine, before any agent work.
//
//	linerelay COMMAND [ARG...]
//
// It exits when its stdin ends, after the command has.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: linerelay COMMAND [ARG...]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fatal(err)
	}
	if err := cmd.Start(); err != nil {
		fatal(err)
	}
	go func() {
		relay(os.Stdin, in)
		in.Close()
	}()
	relay(out, os.Stdout)
	if err := cmd.Wait(); err != nil {
		fatal(err)
	}
}

// relay writes each line of r to w as it comes, one Write per line.
func relay(r io.Reader, w io.Writer) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
		}
		if err != nil && err != bufio.ErrBufferFull { // a longer line goes in parts
			return
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "linerelay:", err)
	os.Exit(1)
}
