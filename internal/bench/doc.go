// Package bench measures what users come to voxhost for: the cost of a
// plugin hop and the frames a machine can push through many concurrent
// calls. Every figure comes with a baseline measured in the same run — a
// native Go hop, the plugin's own C source compiled for the host, a bare
// WebSocket echo server — because absolute numbers on
// a shared machine mean little and ratios travel.
package bench
