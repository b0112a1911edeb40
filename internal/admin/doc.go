// Package admin changes a running host's plugins and routes while calls
// run: the Manager (one transactional path for every change), the watcher
// of the plugin directory, and the token-protected admin HTTP API that
// lists, uploads and deletes plugins and reloads routes. A route is what
// the config calls a pipeline: inbound stages, outbound stages and the bot
// it may relay calls to; the API keeps the name "pipelines".
//
// Every plugin version is identified by its SHA-256. A new or changed
// module is compiled and validated, then every route that uses it, in
// either direction, is rebuilt and the server instantiates it once, and
// only then does it become current: a module that fails any of these steps
// is rejected with the reason and the old version stays. New calls get the
// new version; calls in flight keep the instances they started with, down
// to the last frame. A replaced version is closed after
// catalog.RetireAfter, which never disturbs the calls still running on it.
//
// An upstream's header values carry credentials: the Manager sends them
// to the server and nowhere else; the API names the headers only.
package admin
