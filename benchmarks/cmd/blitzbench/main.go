// Command blitzbench runs the blitz-go benchmark suites and prints comparison tables.
package main

import "fmt"

func main() { fmt.Println("blitzbench: no suites yet") }
