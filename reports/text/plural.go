package text

import "strconv"

// Plural is one when n is 1, many otherwise: "1 of 3 " + Plural(3,
// "request", "requests").
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Count is n followed by Plural's word: "1 GPU", "2 GPUs".
func Count(n int, one, many string) string {
	return strconv.Itoa(n) + " " + Plural(n, one, many)
}
