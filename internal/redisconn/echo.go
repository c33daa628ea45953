/*
Copyright 2026 The redlease Authors.
SPDX-License-Identifier: Apache-2.0
*/

package redisconn

import "strings"

// argsEcho is where Redis and Valkey start quoting a refused command's
// arguments ("ERR unknown command 'acl', with args beginning with: ...").
const argsEcho = ", with args beginning with"

// WithoutEchoedArgs is a server's error text without the arguments it
// echoes after an unknown command: a command's values (an ACL SETUSER's
// password hash among them) stay out of error texts and status, where a
// new value on each attempt would also change the text every time.
func WithoutEchoedArgs(s string) string {
	if i := strings.Index(s, argsEcho); i >= 0 {
		return s[:i]
	}
	return s
}
