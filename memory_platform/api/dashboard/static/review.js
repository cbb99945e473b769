// A namespace's review page (templates/namespace.html): one .card per pending entry.
// Keys: j/k move, a approve, e edit (Enter approves the edit, Esc cancels), s skip (reason,
// Enter), u supersede the contradicted fact, t target namespace, x select, A approve the
// selected. Decisions POST to /review/api/entries/{id}/{approve|skip|supersede} and
// /review/api/bulk-approve; a card leaves on 200 and shows the error otherwise (409: someone
// decided first). Fewer than 10 cards below the selection fetches the next page.
const list=document.getElementById('entries'),counter=document.getElementById('total');
let total=+counter.textContent,nextAfter=list.dataset.next,loading=false;
const cards=()=>[...list.querySelectorAll('.card:not(.gone)')];
let sel=0;
function show(){const c=cards();if(!c.length){list.innerHTML=
 '<p class=ok id=empty>Nothing left to review here.</p>';return}
 sel=Math.max(0,Math.min(sel,c.length-1));c.forEach((x,i)=>x.classList.toggle('sel',i===sel));
 c[sel].scrollIntoView({block:'nearest'});if(c.length-sel<10)more();}
async function more(){if(loading||!nextAfter)return;loading=true;
 const r=await fetch(`/review/api/${encodeURIComponent(list.dataset.ns)}/entries?after_id=${nextAfter}`);
 loading=false;if(!r.ok)return;const d=await r.json();nextAfter=d.next_after_id;
 list.insertAdjacentHTML('beforeend',d.html);show();}
const current=()=>cards()[sel];
async function post(url,body){const r=await fetch(url,{method:'POST',headers:
 {'Content-Type':'application/json'},body:JSON.stringify(body)});
 let d={};try{d=await r.json()}catch(e){}return [r.status,d];}
function done(card){card.classList.add('gone');card.remove();total-=1;
 counter.textContent=total;show();}
function fail(card,status,d){card.querySelector('.msg').textContent=
 (status===409?'Conflict: ':`Error ${status}: `)+(d.detail||'request failed');}
async function act(card,kind,extra){if(!card||card.dataset.busy)return;card.dataset.busy=1;
 const id=card.dataset.id,body=extra||{};
 if(kind==='approve'){const ns=card.querySelector('.target').value;
  if(ns!==card.dataset.defaultNs)body.namespace=ns;}
 if(kind==='supersede')body.old_memory_id=+card.dataset.old;
 const [status,d]=await post(`/review/api/entries/${id}/${kind}`,body);delete card.dataset.busy;
 if(status===200)done(card);else fail(card,status,d);}
function edit(card){const box=card.querySelector('.edit'),ta=box.querySelector('textarea');
 box.hidden=false;ta.focus();ta.setSelectionRange(ta.value.length,ta.value.length);}
function skip(card){const box=card.querySelector('.skip');box.hidden=false;
 box.querySelector('input').focus();}
list.addEventListener('keydown',ev=>{const card=ev.target.closest('.card');if(!card)return;
 if(ev.target.tagName==='TEXTAREA'){if(ev.key==='Enter'&&!ev.shiftKey){ev.preventDefault();
   ev.target.blur();card.querySelector('.edit').hidden=true;
   act(card,'approve',{text:ev.target.value});}
  else if(ev.key==='Escape'){ev.target.blur();card.querySelector('.edit').hidden=true;}
  ev.stopPropagation();}
 else if(ev.target.classList.contains('reason')){if(ev.key==='Enter'){ev.preventDefault();
   ev.target.blur();card.querySelector('.skip').hidden=true;
   act(card,'skip',{reason:ev.target.value||null});}
  else if(ev.key==='Escape'){ev.target.blur();card.querySelector('.skip').hidden=true;}
  ev.stopPropagation();}});
list.addEventListener('click',ev=>{const b=ev.target.closest('button[data-act]');
 const card=ev.target.closest('.card');if(!card)return;sel=cards().indexOf(card);show();
 if(ev.target.classList.contains('pick')){card.classList.toggle('checked',ev.target.checked);
  ev.target.blur();}
 if(!b)return;const k=b.dataset.act;
 if(k==='edit')edit(card);else if(k==='skip')skip(card);else act(card,k);});
// A sensitive memory is shown masked until the reviewer asks for its text.
list.addEventListener('click',ev=>{const r=ev.target.closest('button.reveal');if(!r)return;
 const t=r.closest('.text');t.textContent=t.querySelector('template').content.textContent;});
list.addEventListener('change',ev=>{if(ev.target.classList.contains('target'))ev.target.blur();});
async function bulk(){const picked=cards().filter(c=>c.querySelector('.pick').checked);
 if(!picked.length)return;const [status,d]=await post('/review/api/bulk-approve',
 {ids:picked.map(c=>+c.dataset.id)});if(status!==200){fail(current(),status,d);return;}
 for(const r of d.results){const c=list.querySelector(`.card[data-id="${r.id}"]`);
  if(r.outcome==='approved')done(c);else{c.querySelector('.msg').textContent=r.message;
  c.querySelector('.pick').checked=false;c.classList.remove('checked');}}}
document.addEventListener('keydown',ev=>{const t=ev.target.tagName;
 if(t==='TEXTAREA'||t==='INPUT'||t==='SELECT'||ev.metaKey||ev.ctrlKey||ev.altKey)return;
 const card=current();const k=ev.key;
 if(k==='j'){sel+=1;show();}else if(k==='k'){sel-=1;show();}
 else if(k==='a')act(card,'approve');else if(k==='e'&&card)edit(card);
 else if(k==='s'&&card)skip(card);else if(k==='u'&&card&&card.dataset.old)act(card,'supersede');
 else if(k==='x'&&card){const p=card.querySelector('.pick');p.checked=!p.checked;
  card.classList.toggle('checked',p.checked);}
 else if(k==='t'&&card)card.querySelector('.target').focus();
 else if(k==='A')bulk();else return;ev.preventDefault();});
show();
