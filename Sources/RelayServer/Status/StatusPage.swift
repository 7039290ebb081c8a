import RelayAggregates

/// `GET /status`: one self-contained page (no CDN, no build step) that reads `/v1/status` and
/// `/v1/deliveries` every 3 seconds and shows them (the registrations per app come with the
/// status, as `stats` prints them).
///
/// The page itself holds no figure, so it is served to anyone; the figures come from the admin
/// API. When that answers 401 (an admin token is set), the page shows a login form and keeps the
/// token in the tab's `sessionStorage`, sending it as `Authorization: Bearer`; the input has no
/// `name`, so not even a page without JavaScript could put it in a URL. Every value from the
/// server goes into the page as text (`textContent`), never as markup: delivery ids and error
/// messages come from clients and hosts.
///
/// The counts' columns come from the ``MetricTable``: per delivery, each total metric followed by
/// the unique one of the same action ("unique"), per app each metric under its label.
enum StatusPage {
    /// The page of the standard metrics.
    static let html = html(.standard)

    /// The page whose counts show the metrics of `table`.
    static func html(_ table: MetricTable) -> String {
        let deliveries = StatusPageCounts(table)
        return #"""
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>campaign-relay status</title>
            <style>
              body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; background: #f4f5f7; color: #1d2330; }
              header { background: #1d2330; color: #fff; padding: 12px 24px; display: flex; gap: 24px; align-items: baseline; flex-wrap: wrap; }
              header h1 { font-size: 18px; margin: 0; }
              header span { color: #b8c0d0; font-size: 13px; }
              main { padding: 16px 24px; display: grid; gap: 16px; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); }
              section { background: #fff; border-radius: 8px; padding: 12px 16px; box-shadow: 0 1px 2px rgba(0,0,0,.08); }
              section.wide { grid-column: 1 / -1; }
              h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: #5b6478; margin: 0 0 8px; }
              .big { font-size: 26px; font-weight: 600; }
              .muted { color: #5b6478; }
              table { border-collapse: collapse; width: 100%; }
              th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid #e6e8ee; font-variant-numeric: tabular-nums; }
              th { font-weight: 600; color: #5b6478; font-size: 12px; }
              td.n { text-align: right; }
              .bad { color: #b42318; font-weight: 600; }
              .ok { color: #067647; font-weight: 600; }
              .warn { color: #b54708; font-weight: 600; }
              #login { max-width: 360px; margin: 48px auto; background: #fff; padding: 24px; border-radius: 8px; box-shadow: 0 1px 3px rgba(0,0,0,.12); }
              #login input { width: 100%; box-sizing: border-box; padding: 8px; margin: 8px 0 12px; font: inherit; }
              #login button { padding: 8px 16px; font: inherit; }
              [hidden] { display: none !important; }
              svg.spark { width: 120px; height: 24px; }
            </style>
            </head>
            <body>
            <header><h1>campaign-relay</h1><span id="identity"></span><span id="updated">loading…</span><span id="problem" class="bad"></span></header>
            <form id="login" method="post" action="/status" autocomplete="off" hidden>
              <h2>Admin token</h2>
              <p class="muted">This relay needs its admin token (<code>--admin-token</code>) to show its figures. It is kept in this tab only.</p>
              <input id="token" type="password" aria-label="admin token" placeholder="admin token">
              <button type="submit">Show the status</button>
              <p id="login-problem" class="bad"></p>
            </form>
            <main id="status" hidden>
              <section><h2>Intake</h2><div class="big" id="intake-rate">–</div><div class="muted">events stored per second (last 10 s)</div>
                <div class="muted">last sequence <span id="last-sequence">–</span></div></section>
              <section><h2>Log</h2><div class="big" id="log-size">–</div><div class="muted"><span id="log-quota">no quota</span></div>
                <div class="muted"><span id="log-segments">–</span>, <span id="log-disk">–</span> on disk</div>
                <div class="muted">keeps from sequence <span id="log-first">–</span> <span id="log-first-time"></span></div>
                <div class="muted" id="log-retention"></div>
                <div class="muted">an acknowledgement is on <span id="log-copies">–</span> (<span id="log-store">–</span>)</div></section>
              <section><h2>fdatasync, last minute</h2><div class="big"><span id="fsync-p50">–</span> / <span id="fsync-p99">–</span></div>
                <div class="muted">p50 / p99 of <span id="fsync-commits">0</span> commits</div></section>
              <section><h2>Dead letters</h2><div class="big" id="dead-letters">–</div><div class="muted">events given up on (deadletter list)</div></section>
              <section><h2>Counting</h2><div id="counting" class="muted">–</div></section>
              <section class="wide"><h2>Destinations</h2>
                <table><thead><tr><th>destination</th><th class="n">backlog</th><th class="n">oldest unsent</th><th>breaker</th><th class="n">delivered/s</th><th class="n">in flight</th><th>rate</th><th>last error</th></tr></thead>
                <tbody id="destinations"></tbody></table>
                <p id="no-destinations" class="muted" hidden>No destination: events are stored and counted, not forwarded.</p></section>
              <section class="wide"><h2>Deliveries <span class="muted" id="aggregated"></span></h2>
                <table><thead><tr><th>delivery</th>\#(deliveries.deliveryHeader)<th>last event</th><th>activity since this page opened</th></tr></thead>
                <tbody id="deliveries"></tbody></table></section>
              <section class="wide" id="registrations-section" hidden><h2>Registrations per app</h2>
                <table><thead><tr><th>app (integration key)</th><th>platform</th>\#(deliveries.appHeader)<th>first</th><th>last</th></tr></thead>
                <tbody id="registrations"></tbody></table>
                <p id="no-registrations" class="muted" hidden>No registration counted yet.</p></section>
              <section class="wide" id="origins-section" hidden><h2>Events other relays handed on, by first origin</h2>
                <table><thead><tr><th>relay</th><th class="n">epoch</th><th class="n">events</th><th class="n">hits</th><th class="n">registrations</th><th class="n">last sequence</th><th>via</th></tr></thead>
                <tbody id="origins"></tbody></table></section>
            </main>
            <script>
            "use strict";
            const tokenKey = "campaign-relay-admin-token";
            const activity = new Map();
            const $ = (id) => document.getElementById(id);
            function text(id, value) { $(id).textContent = value; }
            function number(value) { return value === undefined || value === null ? "–" : Number(value).toLocaleString("en-US"); }
            function rate(value) { return value === undefined || value === null ? "–" : (value >= 100 ? Math.round(value).toLocaleString("en-US") : value.toFixed(1)); }
            function bytes(value) {
              const units = ["B", "KiB", "MiB", "GiB", "TiB"]; let unit = 0;
              while (value >= 1024 && unit < units.length - 1) { value /= 1024; unit += 1; }
              return (unit === 0 ? value : value.toFixed(1)) + " " + units[unit];
            }
            function age(seconds) {
              if (seconds === undefined || seconds === null) return "–";
              if (seconds < 1) return "< 1 s";
              if (seconds < 120) return Math.round(seconds) + " s";
              if (seconds < 7200) return Math.round(seconds / 60) + " min";
              return (seconds / 3600).toFixed(1) + " h";
            }
            function millis(seconds) { return seconds === undefined || seconds === null ? "–" : (seconds * 1000).toFixed(2) + " ms"; }
            function cell(row, value, className, field) {
              const td = document.createElement("td"); td.textContent = value;
              if (className) td.className = className;
              if (field) td.dataset.field = field;
              row.appendChild(td); return td;
            }
            function spark(values) {
              const ns = "http://www.w3.org/2000/svg";
              const svg = document.createElementNS(ns, "svg"); svg.setAttribute("class", "spark"); svg.setAttribute("viewBox", "0 0 120 24");
              const steps = values.slice(1).map((v, i) => Math.max(0, v - values[i]));
              const top = Math.max(1, ...steps);
              const line = document.createElementNS(ns, "polyline");
              line.setAttribute("fill", "none"); line.setAttribute("stroke", "#3867d6"); line.setAttribute("stroke-width", "1.5");
              line.setAttribute("points", (steps.length ? steps : [0]).map((v, i, all) => (all.length < 2 ? 0 : (i * 120 / (all.length - 1))).toFixed(1) + "," + (22 - v * 20 / top).toFixed(1)).join(" "));
              svg.appendChild(line); return svg;
            }
            async function get(path) {
              const headers = {};
              const token = sessionStorage.getItem(tokenKey);
              if (token) headers["Authorization"] = "Bearer " + token;
              const response = await fetch(path, { headers, cache: "no-store" });
              if (response.status === 401 || response.status === 403) {
                // The token the request carried: a refresh sent before a login carried none, and its
                // refusal says nothing of the token given since.
                const error = new Error("unauthorized"); error.unauthorized = true; error.token = token; throw error;
              }
              if (!response.ok) throw new Error(path + " answered " + response.status);
              return response.json();
            }
            function showStatus(status) {
              text("identity", "relay " + status.relayId + " · epoch " + status.epoch + " · " + status.version);
              text("intake-rate", rate(status.intake.eventsPerSecond));
              text("last-sequence", number(status.intake.lastDurableSequence));
              text("log-size", bytes(status.log.dataBytes));
              text("log-disk", bytes(status.log.diskBytes));
              text("log-first", number(status.log.oldestSequence));
              text("log-first-time", status.log.firstEventTime ? "(" + status.log.firstEventTime + ")" : "");
              text("log-retention", (status.log.retainSeconds > 0 ? "passed segments kept " + age(status.log.retainSeconds) : "passed segments deleted at once")
                + (status.log.retainBytes !== undefined && status.log.retainSeconds > 0 ? " within " + bytes(status.log.retainBytes) : "")
                + (status.log.archiveDirectory ? ", then archived in " + status.log.archiveDirectory : "")
                + "; " + number(status.log.segmentsRemoved) + " gone since start");
              text("log-copies", status.log.copies === 1 ? "1 copy" : number(status.log.copies) + " copies");
              text("log-store", status.log.store === "postgresql"
                ? "PostgreSQL" + (status.log.synchronousStandbys && status.log.synchronousStandbys.length ? ", synchronous standby " + status.log.synchronousStandbys.join(", ") : ", no synchronous standby")
                : "this machine's disk");
              text("log-segments", number(status.log.segments) + (status.log.segments === 1 ? " segment" : " segments"));
              text("log-quota", status.log.quotaBytes ? (status.log.quotaUsed * 100).toFixed(1) + " % of " + bytes(status.log.quotaBytes) + " used" : "no quota (--max-wal-bytes)");
              text("fsync-p50", millis(status.fsync.p50Seconds)); text("fsync-p99", millis(status.fsync.p99Seconds));
              text("fsync-commits", number(status.fsync.commits));
              text("dead-letters", number(status.deadLetters));
              $("dead-letters").className = "big" + (status.deadLetters > 0 ? " bad" : "");
              text("counting", status.counting.length ? status.counting.map((c) => c.store + ": " + number(c.lag) + " events behind" + (c.lastError ? " (" + c.lastError + ")" : "")).join(" · ") : "off (--no-aggregates)");
              const body = $("destinations"); body.replaceChildren();
              for (const destination of status.destinations) {
                const tenanted = destination.tenant !== "default" && destination.tenant !== "*";
                const row = document.createElement("tr"); row.dataset.destination = tenanted ? destination.name + "_" + destination.tenant : destination.name;
                const name = cell(row, destination.name + (tenanted ? " of " + destination.tenant : "") + " "); const url = document.createElement("span"); url.className = "muted"; url.textContent = destination.url; name.appendChild(url);
                cell(row, number(destination.backlog), "n", "backlog");
                cell(row, age(destination.oldestUnsentSeconds), "n", "oldest-unsent");
                const healthy = destination.breaker === "closed" || destination.breaker === "reachable";
                // With spare hosts, those whose own breaker is not closed too: "closed; http://a open".
                const hosts = destination.hosts || [];
                const breakers = hosts.length > 1 ? destination.breaker + "; " + hosts.filter((h) => h.breaker !== "closed").map((h) => h.url + " " + h.breaker).join(", ") : destination.breaker;
                cell(row, breakers.replace(/; $/, ""), healthy ? (hosts.some((h) => h.breaker !== "closed") ? "warn" : "ok") : "bad", "breaker");
                cell(row, rate(destination.deliveredPerSecond), "n", "delivered-per-second");
                const limit = destination.concurrency;
                cell(row, limit ? number(limit.inFlight) + " of " + number(limit.limit)
                  + (limit.adaptive ? " (adaptive, at most " + number(limit.ceiling) + (limit.roundTripSeconds !== undefined ? "; round trip " + millis(limit.roundTripSeconds) + ", baseline " + millis(limit.roundTripBaselineSeconds) : "") + ")" : " (fixed)")
                  : "–", "n", "concurrency");
                cell(row, !limit || limit.maximumRate === undefined ? "–" : (limit.paced ? "paced at " : "at most ") + number(limit.maximumRate) + "/s", limit && limit.paced ? "warn" : "", "rate");
                cell(row, destination.lastError ? destination.lastError + " (" + destination.lastErrorAt + ")" : "–", destination.lastError ? "bad" : "", "last-error");
                body.appendChild(row);
              }
              $("no-destinations").hidden = status.destinations.length > 0;
              // Absent when the relay does not count (--no-aggregates): then the section is too.
              const registrations = status.registrations;
              $("registrations-section").hidden = registrations === undefined;
              const apps = $("registrations"); apps.replaceChildren();
              for (const app of registrations || []) {
                const tenanted = app.tenant !== "default";
                const row = document.createElement("tr"); row.dataset.registration = app.tenant + "/" + app.integrationKey + "/" + app.platform;
                cell(row, app.integrationKey + (tenanted ? " of " + app.tenant : ""), "", "app");
                cell(row, app.platform, "", "platform");
            \#(deliveries.appCells)    cell(row, app.firstEvent, "muted", "first-event"); cell(row, app.lastEvent, "muted", "last-event");
                apps.appendChild(row);
              }
              $("no-registrations").hidden = (registrations || []).length > 0;
              text("updated", "updated " + new Date().toLocaleTimeString());
            }
            function showDeliveries(report) {
              text("aggregated", report.source === "postgres"
                ? "the fleet's counts in PostgreSQL, from " + number(report.relays.length) + " relays"
                : "counted through sequence " + number(report.aggregatedThrough));
              const body = $("deliveries"); body.replaceChildren();
              for (const delivery of report.deliveries) {
                const total = \#(deliveries.activity);
                const seen = activity.get(delivery.deliveryId) || []; seen.push(total); if (seen.length > 60) seen.shift();
                activity.set(delivery.deliveryId, seen);
                const row = document.createElement("tr"); row.dataset.delivery = delivery.deliveryId;
                cell(row, delivery.deliveryId, "", "delivery");
            \#(deliveries.deliveryCells)    cell(row, delivery.lastEvent, "muted", "last-event");
                cell(row, "").appendChild(spark(seen));
                body.appendChild(row);
              }
              const origins = report.origins || [];
              $("origins-section").hidden = origins.length === 0;
              const list = $("origins"); list.replaceChildren();
              for (const origin of origins) {
                const row = document.createElement("tr"); row.dataset.origin = origin.relayId;
                cell(row, origin.relayId); cell(row, number(origin.epoch), "n"); cell(row, number(origin.events), "n", "events");
                cell(row, number(origin.hits), "n"); cell(row, number(origin.registrations), "n"); cell(row, number(origin.lastSequence), "n");
                cell(row, origin.via || "–");
                list.appendChild(row);
              }
            }
            async function refresh() {
              try {
                // Relative: at /brand-a/status the page reads brand-a's figures alone.
                const [status, report] = await Promise.all([get("v1/status"), get("v1/deliveries?limit=20")]);
                $("login").hidden = true; $("status").hidden = false; text("problem", "");
                showStatus(status); showDeliveries(report);
              } catch (error) {
                if (error.unauthorized) {
                  $("status").hidden = true; $("login").hidden = false;
                  $("deliveries").replaceChildren(); $("destinations").replaceChildren(); $("registrations").replaceChildren();
                  const stored = sessionStorage.getItem(tokenKey);
                  if (stored && stored === error.token) { text("login-problem", "That token was refused."); sessionStorage.removeItem(tokenKey); }
                } else {
                  text("problem", "cannot reach the relay: " + error.message);
                }
              }
            }
            $("login").addEventListener("submit", (event) => {
              event.preventDefault();
              sessionStorage.setItem(tokenKey, $("token").value); $("token").value = ""; text("login-problem", "");
              refresh();
            });
            refresh();
            setInterval(refresh, 3000);
            </script>
            </body>
            </html>
            """#
    }
}
