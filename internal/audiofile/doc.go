// Package audiofile reads and writes the audio files that voxhost run
// processes: RIFF WAVE files holding PCM16 and headerless G.711 μ-law files.
//
// Both are handed to the caller as PCM16LE bytes, the layout the host copies
// into guest memory. Files voxhost cannot use are rejected with a message
// that says what the file holds and gives a sox command that converts it,
// since the person running voxhost usually got the file from somewhere else
// and needs to know how to fix it rather than which byte was wrong.
package audiofile
