// Command embed is the smallest program that puts voxhost between Twilio
// and a voice bot: Twilio streams the call to /twilio, the caller's audio
// goes through the stock vad (which raises barge-in) and agc to a bot that
// speaks Twilio Media Streams, and the bot's answer comes back paced.
package main

import (
	"context"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/voxhost/voxhost/host/catalog"
	"github.com/voxhost/voxhost/host/codec"
	"github.com/voxhost/voxhost/host/pipeline"
	"github.com/voxhost/voxhost/host/plugin"
	"github.com/voxhost/voxhost/host/server"
	"github.com/voxhost/voxhost/host/transport"
)

func main() {
	ctx := context.Background()
	rt, err := plugin.NewRuntime(ctx, plugin.Options{})
	check(err)
	stages, err := pipeline.ParseSpec("vad barge_in=true | agc")
	check(err)
	inbound, err := catalog.New(rt, "").Definition(ctx, "bot", stages) // stock plugins by name
	check(err)
	twilio, err := transport.LookupDialect("twilio")
	check(err)
	bot := &server.Upstream{URL: "ws://127.0.0.1:8090/twilio?call={call_id}", Dialect: twilio, Format: codec.Telephony}
	reg := prometheus.NewRegistry()
	srv, err := server.New(ctx, server.Options{Runtime: rt, Registerer: reg, DefaultRoute: "bot",
		Routes: map[string]*server.Route{"bot": {Inbound: inbound, Upstream: bot}}})
	check(err)
	mux := http.NewServeMux()
	mux.Handle("GET /twilio", srv.CallHandler(transport.Twilio()))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe(":8080", mux))
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
